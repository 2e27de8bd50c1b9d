//! What plancheck says on stderr, as it goes: progress and diagnostics, every secret hidden. A closed stderr
//! (`plancheck demo 2>&1 | head`) is not worth a panic: the text is dropped, the run goes on and
//! still cleans up.

/// Writes a line to stderr, every secret hidden ([`crate::secrets`]).
macro_rules! say {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", $crate::secrets::redact(&text));
    }};
}

/// Like [`say!`], without the newline, flushed.
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let mut err = std::io::stderr();
        let _ = write!(err, "{}", $crate::secrets::redact(&text));
        let _ = err.flush();
    }};
}

pub(crate) use {say, say_part};

/// How progress is shown: one live line rewritten in place on a terminal, a line per check
/// where stderr is a file or a CI log, nothing with `--quiet`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Live,
    Lines,
    Quiet,
}

/// Progress through a run's checks, on stderr.
pub struct Progress {
    total: usize,
    done: usize,
    mode: Mode,
    /// Said before each check: `before the migration`, ….
    phase: &'static str,
    /// Whether the live line is on screen, to be cleared.
    shown: bool,
}

/// A live line longer than this is cut, so that it never wraps (a wrapped line cannot be
/// rewritten in place).
const LIVE_WIDTH: usize = 78;

/// A live line cut to [`LIVE_WIDTH`], so that it never wraps.
fn fitted(line: &str) -> String {
    if line.chars().count() > LIVE_WIDTH {
        line.chars().take(LIVE_WIDTH - 1).collect::<String>() + "…"
    } else {
        line.to_string()
    }
}

impl Progress {
    pub fn new(total: usize, quiet: bool, phase: &'static str) -> Progress {
        use std::io::IsTerminal;
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Live
        } else {
            Mode::Lines
        };
        Progress {
            total,
            done: 0,
            mode,
            phase,
            shown: false,
        }
    }

    /// A check begins: on a terminal, the live line says which, and how far the run is.
    pub fn start(&mut self, what: &str) {
        if self.mode != Mode::Live {
            return;
        }
        let line = fitted(&format!(
            "[{}/{}] {}checking {what} …",
            self.done + 1,
            self.total,
            self.phase
        ));
        say_part!("\r\x1b[2K{line}");
        self.shown = true;
    }

    /// A check ended with `verdict`: a line of its own where stderr is not a terminal.
    pub fn finish(&mut self, what: &str, verdict: &str) {
        self.done += 1;
        if self.mode == Mode::Lines {
            say!(
                "[{}/{}] {}{what}: {verdict}",
                self.done,
                self.total,
                self.phase
            );
        }
    }

    /// Takes the live line away, before the report is printed.
    pub fn clear(&mut self) {
        if self.shown {
            say_part!("\r\x1b[2K");
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A live line of how far a long read has come (`capture` reading its logs): on a terminal
/// only, rewritten at most ten times a second, taken away when done; nothing off a terminal or
/// with `--quiet`.
pub struct Meter {
    live: bool,
    last: Option<std::time::Instant>,
    shown: bool,
}

impl Meter {
    pub fn new(quiet: bool) -> Meter {
        use std::io::IsTerminal;
        Meter {
            live: !quiet && std::io::stderr().is_terminal(),
            last: None,
            shown: false,
        }
    }

    /// Whether a new line would be shown now: the line is made only then.
    pub fn due(&self) -> bool {
        self.live
            && self
                .last
                .is_none_or(|t| t.elapsed() >= std::time::Duration::from_millis(100))
    }

    /// Shows `line` in place of the last one.
    pub fn show(&mut self, line: &str) {
        if !self.live {
            return;
        }
        let line = fitted(line);
        say_part!("\r\x1b[2K{line}");
        self.shown = true;
        self.last = Some(std::time::Instant::now());
    }

    /// Takes the line away.
    pub fn clear(&mut self) {
        if self.shown {
            say_part!("\r\x1b[2K");
            self.shown = false;
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.clear();
    }
}
