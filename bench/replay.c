/* The floor replay of bench/floor.py, in C, so the replaying client's own work is as near
 * nothing as a client's can be: a blocking Unix socket, one send per recorded send, reads until
 * the answers it asks for came.
 *
 *   replay SOCKET USER DATABASE APPLICATION PLAN
 *
 * PLAN (written by bench/floor.py): per connection a u32 count of sends, then per send a u32
 * length, a u32 count of ReadyForQuery answers awaited and the bytes (network byte order).
 * Prints the wall seconds of the sends and answers (connecting not counted) and the process's
 * CPU seconds (user + system) in that time. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];
static size_t have;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Reads until `count` ReadyForQuery messages came; bytes after the last one stay buffered. */
static void await_ready(int fd, uint32_t count) {
    uint32_t seen = 0;
    for (;;) {
        size_t at = 0;
        while (have - at >= 5) {
            uint32_t len = be32((unsigned char *)buf + at + 1);
            if (have - at < 1 + (size_t)len) break;
            char kind = buf[at];
            at += 1 + len;
            if (kind == 'Z' && ++seen == count) {
                memmove(buf, buf + at, have - at);
                have -= at;
                return;
            }
        }
        memmove(buf, buf + at, have - at);
        have -= at;
        if (have == sizeof buf) {
            fprintf(stderr, "replay: a message larger than the buffer\n");
            exit(1);
        }
        ssize_t n = recv(fd, buf + have, sizeof buf - have, 0);
        if (n <= 0) die("recv");
        have += (size_t)n;
    }
}

static void send_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0) die("send");
        p += k;
        n -= (size_t)k;
    }
}

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: replay SOCKET USER DATABASE APPLICATION PLAN\n");
        return 2;
    }
    FILE *plan = fopen(argv[5], "rb");
    if (!plan) die(argv[5]);
    double wall = 0, cpu = 0;
    unsigned char head[8];
    while (fread(head, 1, 4, plan) == 4) {
        uint32_t sends = be32(head);
        /* The connection's sends read whole before anything is timed. */
        char **data = calloc(sends ? sends : 1, sizeof *data);
        uint32_t *size = calloc(sends ? sends : 1, sizeof *size);
        uint32_t *awaited = calloc(sends ? sends : 1, sizeof *awaited);
        if (!data || !size || !awaited) die("calloc");
        for (uint32_t i = 0; i < sends; i++) {
            if (fread(head, 1, 8, plan) != 8) die("plan");
            size[i] = be32(head);
            awaited[i] = be32(head + 4);
            data[i] = malloc(size[i] ? size[i] : 1);
            if (!data[i] || fread(data[i], 1, size[i], plan) != size[i]) die("plan");
        }
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("connect");
        char startup[512];
        size_t n = 8;
        const char *pairs[] = {"user", argv[2], "database", argv[3], "application_name", argv[4]};
        for (int i = 0; i < 6; i++) {
            size_t l = strlen(pairs[i]) + 1;
            if (n + l + 1 > sizeof startup) return 2;
            memcpy(startup + n, pairs[i], l);
            n += l;
        }
        startup[n++] = 0;
        uint32_t len = htonl((uint32_t)n), version = htonl(196608);
        memcpy(startup, &len, 4);
        memcpy(startup + 4, &version, 4);
        send_all(fd, startup, n);
        have = 0;
        await_ready(fd, 1);
        double start = now_seconds(), start_cpu = cpu_seconds();
        for (uint32_t i = 0; i < sends; i++) {
            send_all(fd, data[i], size[i]);
            if (awaited[i]) await_ready(fd, awaited[i]);
        }
        wall += now_seconds() - start;
        cpu += cpu_seconds() - start_cpu;
        for (uint32_t i = 0; i < sends; i++) free(data[i]);
        free(data);
        free(size);
        free(awaited);
        send_all(fd, "X\0\0\0\4", 5);
        close(fd);
    }
    printf("%.6f %.6f\n", wall, cpu);
    return 0;
}
