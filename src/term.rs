//! What plancheck says on stderr, as it goes: progress and diagnostics. A closed stderr
//! (`plancheck demo 2>&1 | head`) is not worth a panic: the text is dropped, the run goes on and
//! still cleans up.

/// Writes a line to stderr.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Like [`say!`], without the newline, flushed.
macro_rules! say_part {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut err = std::io::stderr();
        let _ = write!(err, $($arg)*);
        let _ = err.flush();
    }};
}

pub(crate) use {say, say_part};
