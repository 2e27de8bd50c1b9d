//! The machine plancheck runs on, as a performance page states it: the processors and the
//! memory, read from Linux's `/proc`, or from `sysctl` on macOS. A figure belongs to its
//! machine; the page says which.

/// `2× AMD EPYC 7B13, 24 GiB`; `None` where the system does not say.
#[cfg(not(target_os = "macos"))]
pub fn describe() -> Option<String> {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    describe_from(&cpuinfo, &meminfo)
}

/// `8× Apple M2, 16 GiB`, from `sysctl`; `None` where it does not say.
#[cfg(target_os = "macos")]
pub fn describe() -> Option<String> {
    let out = std::process::Command::new("/usr/sbin/sysctl")
        .args(["-n", "hw.ncpu", "machdep.cpu.brand_string", "hw.memsize"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    describe_from_sysctl(&String::from_utf8_lossy(&out.stdout))
}

/// `sysctl -n hw.ncpu machdep.cpu.brand_string hw.memsize`: one value per line.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
fn describe_from_sysctl(out: &str) -> Option<String> {
    let mut lines = out.lines().map(str::trim);
    let processors: u32 = lines.next()?.parse().ok()?;
    let model = lines.next().filter(|m| !m.is_empty())?;
    let bytes: f64 = lines.next()?.parse().ok()?;
    let gib = bytes / (1024.0 * 1024.0 * 1024.0);
    Some(format!("{}× {model}, {gib:.0} GiB", processors.max(1)))
}

#[cfg_attr(target_os = "macos", allow(dead_code))]
fn describe_from(cpuinfo: &str, meminfo: &str) -> Option<String> {
    let value = |line: &str| line.split_once(':').map(|(_, v)| v.trim().to_string());
    let processors = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(value)
        .unwrap_or_else(|| "processors".to_string());
    let kib: f64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(value)?
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let gib = kib / (1024.0 * 1024.0);
    Some(format!("{}× {model}, {gib:.0} GiB", processors.max(1)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn processors_model_and_memory() {
        let cpu = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.10GHz\n\n\
                   processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor @ 2.10GHz\n";
        let mem = "MemTotal:       25165824 kB\nMemFree:  1 kB\n";
        assert_eq!(
            super::describe_from(cpu, mem).as_deref(),
            Some("2× Intel(R) Xeon(R) Processor @ 2.10GHz, 24 GiB")
        );
        assert_eq!(super::describe_from(cpu, "nothing\n"), None);
    }

    #[test]
    fn processors_model_and_memory_from_sysctl() {
        assert_eq!(
            super::describe_from_sysctl("8\nApple M2\n17179869184\n").as_deref(),
            Some("8× Apple M2, 16 GiB")
        );
        assert_eq!(super::describe_from_sysctl("8\n\n17179869184\n"), None);
        assert_eq!(super::describe_from_sysctl(""), None);
    }
}
