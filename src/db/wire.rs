//! The byte stream under the protocol: plancheck's own sockets, with a bound on what one message
//! from the server may announce.
//!
//! tokio-postgres reads a whole backend message into memory before it hands it on, whatever
//! length its header announces: a server (or whatever answers in its place) announcing a 1.9 GB
//! row made plancheck hold gigabytes before any cap of its own could look at the row.
//! [`Bounded`] sits between the socket (or, with TLS, the TLS session) and the protocol, and
//! reads each message's header, its type byte and 4-byte length, before any of its body. A
//! message longer than [`MAX_MESSAGE`] is refused from its length alone: in its place the
//! protocol reads a FATAL error (SQLSTATE 08P01, protocol violation) whose words
//! (`report::connect::over_cap`) name the cap, the message and its length, then the end of the
//! stream. The request that waited for the message fails with those words, the session is over,
//! and nothing more is read from the server: what plancheck holds of one message is bounded by
//! the cap, whatever the server sends.
//!
//! The one byte a server answers an SSLRequest with is not a message: a stream that sent one
//! ([`Bounded::answering`]) reads it alone, then hands the rest to the TLS session (which has a
//! [`Bounded`] of its own above it) or, when the server has no TLS, frames it as messages.
//!
//! tokio-postgres opens no socket here (`connect_raw`), so it knows no address to send a cancel
//! request to: [`cancel`] sends it, to where the session was opened, over TLS when the session
//! is.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, NoTls, TlsConnect, TlsStream};
use tokio_postgres::{CancelToken, Client};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::check::MAX_PLAN_DOCUMENT;
use super::conninfo::{Host, HostSpec};

/// The longest message plancheck takes from a server (its length as announced, the 4 bytes of
/// the length included): the largest EXPLAIN document plancheck reads ([`MAX_PLAN_DOCUMENT`],
/// 8 MiB) and a MiB for the rest of its row and whatever else one message carries (an error's
/// context, a catalog definition). Over it, the message is refused before it is read.
pub const MAX_MESSAGE: usize = MAX_PLAN_DOCUMENT + (1 << 20);

/// What is read next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The one byte that answers an SSLRequest.
    Answer,
    /// Messages: a header, then its body.
    Framing,
    /// The server agreed to TLS: the TLS session reads these bytes, and frames what it
    /// decrypts with a `Bounded` of its own.
    Transparent,
    /// A message was refused: the stream has ended.
    Refused,
}

/// A server's byte stream, read message by message, each message's length checked against the
/// cap before its body is read.
pub struct Bounded<S> {
    inner: S,
    state: State,
    cap: usize,
    /// Bytes read and checked, not yet handed on, from `at`.
    ready: Vec<u8>,
    at: usize,
    /// The header of the next message, as much of it as was read.
    header: [u8; 5],
    have: usize,
    /// Bytes of the current message's body still to come.
    body: usize,
    scratch: Box<[u8]>,
}

impl<S> Bounded<S> {
    /// A stream of messages.
    pub fn framing(inner: S) -> Bounded<S> {
        Bounded::with(inner, State::Framing, MAX_MESSAGE)
    }

    /// A stream whose first byte answers the SSLRequest just sent.
    pub fn answering(inner: S) -> Bounded<S> {
        Bounded::with(inner, State::Answer, MAX_MESSAGE)
    }

    fn with(inner: S, state: State, cap: usize) -> Bounded<S> {
        Bounded {
            inner,
            state,
            cap,
            ready: Vec::new(),
            at: 0,
            header: [0; 5],
            have: 0,
            body: 0,
            scratch: vec![0; 16 << 10].into_boxed_slice(),
        }
    }

    /// Frames the first `n` bytes of the scratch buffer: bodies and accepted headers are made
    /// ready to hand on, a header not yet whole is kept, and a header over the cap ends the
    /// stream with the error that takes its place.
    fn frame(&mut self, n: usize) {
        let mut i = 0;
        while i < n {
            if self.body > 0 {
                let k = self.body.min(n - i);
                self.ready.extend_from_slice(&self.scratch[i..i + k]);
                self.body -= k;
                i += k;
                continue;
            }
            let k = (5 - self.have).min(n - i);
            self.header[self.have..self.have + k].copy_from_slice(&self.scratch[i..i + k]);
            self.have += k;
            i += k;
            if self.have < 5 {
                return;
            }
            self.have = 0;
            let length = u32::from_be_bytes([
                self.header[1],
                self.header[2],
                self.header[3],
                self.header[4],
            ]);
            let announced = usize::try_from(length).unwrap_or(usize::MAX);
            if announced > self.cap {
                let words = crate::report::connect::over_cap(self.header[0], length, self.cap);
                self.ready.extend_from_slice(&fatal(&words));
                self.state = State::Refused;
                return;
            }
            self.ready.extend_from_slice(&self.header);
            // A length under 4 is not a message: tokio-postgres refuses it itself.
            self.body = announced.saturating_sub(4);
        }
    }
}

/// An ErrorResponse of severity FATAL, SQLSTATE 08P01 (protocol violation), saying `words`.
fn fatal(words: &str) -> Vec<u8> {
    let mut fields = Vec::new();
    for (code, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', "08P01"),
        (b'M', words),
    ] {
        fields.push(code);
        // A NUL would end the field early: the words never hold one, but make sure.
        fields.extend(value.bytes().filter(|b| *b != 0));
        fields.push(0);
    }
    fields.push(0);
    let mut message = vec![b'E'];
    let length = u32::try_from(fields.len() + 4).unwrap_or(u32::MAX);
    message.extend_from_slice(&length.to_be_bytes());
    message.extend_from_slice(&fields);
    message
}

impl<S: AsyncRead + Unpin> AsyncRead for Bounded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.at);
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                if this.at == this.ready.len() {
                    this.ready.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            match this.state {
                State::Refused => return Poll::Ready(Ok(())),
                State::Transparent => return Pin::new(&mut this.inner).poll_read(cx, buf),
                State::Answer => {
                    // One byte and no more: what follows it is the TLS session's, or messages.
                    let mut one = [0u8; 1];
                    let mut answer = ReadBuf::new(&mut one);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut answer))?;
                    if answer.filled().is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                    this.state = if one[0] == b'S' {
                        State::Transparent
                    } else {
                        State::Framing
                    };
                    buf.put_slice(&one);
                    return Poll::Ready(Ok(()));
                }
                State::Framing => {
                    let mut read = ReadBuf::new(&mut this.scratch);
                    ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
                    let n = read.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    this.frame(n);
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Bounded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

impl<S: TlsStream + Unpin> TlsStream for Bounded<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

/// A socket plancheck opened: TCP or a Unix socket.
pub enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Socket::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Socket::Tcp(s) => s.is_write_vectored(),
            Socket::Unix(s) => s.is_write_vectored(),
        }
    }
}

/// Where a session was opened: the address its socket reached.
#[derive(Debug, Clone)]
pub enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// Opens a socket to `host` as libpq does: the Unix socket `.s.PGSQL.PORT` in the host's
/// folder; else `hostaddr` when given, or each address the host name resolves to in turn.
/// TCP sockets send at once (no Nagle delay: a check's requests are pipelined) and keep the
/// connection alive as tokio-postgres's own do.
pub async fn open(host: &HostSpec) -> io::Result<(Socket, Peer)> {
    let name = match (&host.host, host.hostaddr) {
        (Some(Host::Unix(dir)), _) => {
            let path = dir.join(format!(".s.PGSQL.{}", host.port));
            return Ok((
                Socket::Unix(UnixStream::connect(&path).await?),
                Peer::Unix(path),
            ));
        }
        (_, Some(addr)) => {
            let addr = SocketAddr::new(addr, host.port);
            return Ok((tcp(addr).await?, Peer::Tcp(addr)));
        }
        (Some(Host::Tcp(name)), None) => name.as_str(),
        (None, None) => "localhost",
    };
    let mut last = None;
    for addr in tokio::net::lookup_host((name, host.port)).await? {
        match tcp(addr).await {
            Ok(socket) => return Ok((socket, Peer::Tcp(addr))),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve any addresses",
        )
    }))
}

async fn tcp(addr: SocketAddr) -> io::Result<Socket> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    socket2::SockRef::from(&stream).set_keepalive(true)?;
    Ok(Socket::Tcp(stream))
}

async fn reopen(peer: &Peer) -> io::Result<Socket> {
    match peer {
        Peer::Tcp(addr) => tcp(*addr).await,
        Peer::Unix(path) => Ok(Socket::Unix(UnixStream::connect(path).await?)),
    }
}

/// Where to send a session's cancel request, and with which TLS.
#[derive(Clone)]
pub struct Destination {
    pub peer: Peer,
    /// The session's TLS and the server name it checked, when it asked the server for TLS.
    pub tls: Option<(MakeRustlsConnect, String)>,
}

/// A session's cancel key (its backend's process id and secret), as it sends it.
type Key = [u8; 8];

/// Where each open session's cancel request goes, by its cancel key.
static SESSIONS: Mutex<Option<HashMap<Key, Destination>>> = Mutex::new(None);

/// The session is open: its cancel requests go to `to`. Returns the key to [`forget`] it by.
pub async fn register(client: &Client, to: Destination) -> Option<Key> {
    let key = key_of(&client.cancel_token()).await?;
    let mut sessions = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
    sessions.get_or_insert_with(HashMap::new).insert(key, to);
    Some(key)
}

/// The session has ended.
pub fn forget(key: Option<Key>) {
    if let Some(key) = key {
        let mut sessions = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(map) = sessions.as_mut() {
            map.remove(&key);
        }
    }
}

/// Asks the server to cancel what the session of `token` is running: a new connection to
/// where the session was opened, over TLS when the session asked for it, carrying the session's
/// cancel key. Whether the server acts on it, it never says; a session plancheck did not open
/// is not cancelled.
pub async fn cancel(token: &CancelToken) {
    let Some(key) = key_of(token).await else {
        return;
    };
    let destination = {
        let sessions = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        sessions.as_ref().and_then(|m| m.get(&key).cloned())
    };
    let Some(to) = destination else {
        return;
    };
    let Ok(socket) = reopen(&to.peer).await else {
        return;
    };
    let _ = match to.tls {
        Some((mut make, name)) => {
            let tls =
                <MakeRustlsConnect as MakeTlsConnect<Socket>>::make_tls_connect(&mut make, &name)
                    .unwrap_or_else(|never| match never {});
            token.cancel_query_raw(socket, tls).await
        }
        None => token.cancel_query_raw(socket, NoTls).await,
    };
}

/// The SSLRequest's code, after its length (8).
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
/// The CancelRequest's length (16) and code.
const CANCEL_REQUEST: [u8; 8] = [0, 0, 0, 16, 0x04, 0xd2, 0x16, 0x2e];

/// The cancel key in `token`, read from the cancel request it writes into a stream of
/// plancheck's own (agreeing to TLS when it asks, with a TLS that changes nothing):
/// tokio-postgres keeps the key to itself otherwise.
async fn key_of(token: &CancelToken) -> Option<Key> {
    let (mut ours, theirs) = tokio::io::duplex(64);
    let sent = token.cancel_query_raw(theirs, Clear);
    let read = async move {
        let mut got = Vec::new();
        let mut answered = false;
        let mut chunk = [0u8; 64];
        loop {
            let n = ours.read(&mut chunk).await.ok()?;
            if n == 0 {
                return Some(got);
            }
            got.extend_from_slice(&chunk[..n]);
            if !answered && got.len() >= 8 && got[..8] == SSL_REQUEST {
                answered = true;
                got.drain(..8);
                ours.write_all(b"S").await.ok()?;
            }
        }
    };
    let (_, got) = futures_util::future::join(sent, read).await;
    let got = got?;
    if got.len() != 16 || got[..8] != CANCEL_REQUEST {
        return None;
    }
    got[8..].try_into().ok()
}

/// A "TLS" that changes nothing, for [`key_of`]'s stream.
struct Clear;

/// The stream [`Clear`] hands back: the same bytes.
struct ClearStream<S>(S);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsConnect<S> for Clear {
    type Stream = ClearStream<S>;
    type Error = io::Error;
    type Future = std::future::Ready<io::Result<ClearStream<S>>>;

    fn connect(self, stream: S) -> Self::Future {
        std::future::ready(Ok(ClearStream(stream)))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ClearStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ClearStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for ClearStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads everything `server` sends through a `Bounded` of cap `cap`, in chunks of `chunk`.
    fn read_all(server: Vec<u8>, cap: usize, chunk: usize, state: State) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut ours, theirs) = tokio::io::duplex(chunk);
            let write = async move {
                for part in server.chunks(chunk) {
                    if ours.write_all(part).await.is_err() {
                        return;
                    }
                }
            };
            let read = async move {
                // Dropped once read: a writer still writing then fails instead of waiting.
                let mut bounded = Bounded::with(theirs, state, cap);
                let mut out = Vec::new();
                let mut buf = [0u8; 7];
                loop {
                    let n = bounded.read(&mut buf).await.unwrap();
                    if n == 0 {
                        return out;
                    }
                    out.extend_from_slice(&buf[..n]);
                }
            };
            let (_, out) = futures_util::future::join(write, read).await;
            out
        })
    }

    fn message(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&u32::try_from(body.len() + 4).unwrap().to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn messages_within_the_cap_pass_unchanged_however_they_are_split() {
        let mut stream = message(b'T', b"row description");
        stream.extend(message(b'D', &[b'x'; 100]));
        stream.extend(message(b'Z', b"I"));
        stream.extend(message(b'C', b""));
        for chunk in [1, 2, 3, 5, 6, 64] {
            assert_eq!(
                read_all(stream.clone(), 104, chunk, State::Framing),
                stream,
                "{chunk}"
            );
        }
    }

    #[test]
    fn a_message_over_the_cap_is_refused_from_its_header_and_the_stream_ends() {
        let before = message(b'T', b"row description");
        // The header announces 1.9 GB; a little of the body follows, then more that must not be
        // handed on.
        let mut stream = before.clone();
        stream.push(b'D');
        stream.extend_from_slice(&1_900_000_000u32.to_be_bytes());
        stream.extend_from_slice(&[b'x'; 300]);
        for chunk in [1, 4, 5, 6, 64] {
            let out = read_all(stream.clone(), 1000, chunk, State::Framing);
            assert!(out.starts_with(&before), "{chunk}");
            let error = &out[before.len()..];
            assert_eq!(error[0], b'E', "{chunk}: {error:?}");
            let text = String::from_utf8_lossy(error);
            assert!(
                text.contains("FATAL") && text.contains("08P01"),
                "{chunk}: {text}"
            );
            assert!(text.contains("1,900,000,000 bytes"), "{chunk}: {text}");
            assert!(!text.contains("xxx"), "{chunk}: the body was handed on");
            let length = u32::from_be_bytes(error[1..5].try_into().unwrap()) as usize;
            assert_eq!(length + 1, error.len(), "{chunk}: one whole message");
        }
    }

    #[test]
    fn the_answer_to_an_ssl_request_is_one_byte_and_not_a_message() {
        // 'N': no TLS, messages follow, framed.
        let mut stream = vec![b'N'];
        stream.extend(message(b'R', &[0, 0, 0, 0]));
        assert_eq!(read_all(stream.clone(), 100, 64, State::Answer), stream);
        let mut refused = vec![b'N'];
        refused.push(b'D');
        refused.extend_from_slice(&5000u32.to_be_bytes());
        let out = read_all(refused, 100, 64, State::Answer);
        assert_eq!(out[..2], [b'N', b'E']);
        // 'S': what follows is the TLS session's, read as it comes.
        let mut tls = vec![b'S'];
        tls.extend_from_slice(&[0x16, 0x03, 0x03, 0xff, 0xff, 1, 2, 3]);
        assert_eq!(read_all(tls.clone(), 4, 64, State::Answer), tls);
    }
}
