//! Where a value is written: a file being read (errors located at an offset into it), a place
//! kept for an error found later (by the server), and how a message quotes a value.

use std::ops::Range;
use std::sync::Arc;

use crate::error::{BadInput, located};

/// A file being read, for errors located in it.
#[derive(Clone, Copy)]
pub(super) struct File<'a> {
    pub(super) path: &'a str,
    pub(super) text: &'a str,
}

impl File<'_> {
    pub(super) fn at(&self, offset: usize, message: &str) -> BadInput {
        BadInput(located(self.path, self.text, offset, message))
    }

    /// The file offset of byte `at` of a string value whose span is `span`: exact when the
    /// value is written as one plain string (no escapes), else the value's start.
    pub(super) fn inside(&self, span: Range<usize>, value: &str, at: usize) -> usize {
        let raw = self.text.get(span.clone()).unwrap_or("");
        let quoted = (raw.starts_with('"') && raw.ends_with('"'))
            || (raw.starts_with('\'') && raw.ends_with('\''));
        if quoted && raw.len() == value.len() + 2 && &raw[1..raw.len() - 1] == value {
            span.start + 1 + at
        } else {
            span.start
        }
    }
}

/// A place in a file people write: the file's path and text, and a byte offset into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub text: Arc<str>,
    pub offset: usize,
}

impl Place {
    /// `message` located here, with the line shown.
    pub fn locate(&self, message: &str) -> String {
        located(&self.path, &self.text, self.offset, message)
    }

    /// Line and column of the place.
    pub fn spot(&self) -> crate::error::Spot {
        crate::error::Spot::at(&self.path, &self.text, self.offset)
    }
}

/// Longest value a message quotes whole.
const SHOWN_VALUE_CHARS: usize = 60;

/// A value from a file, as a message quotes it: in quotes, escaped, at most 60 characters.
pub(super) fn shown(value: &str) -> String {
    let head: String = value.chars().take(SHOWN_VALUE_CHARS).collect();
    if head.len() < value.len() {
        format!("{head:?}…")
    } else {
        format!("{head:?}")
    }
}

/// At most 60 characters of a value, for a message.
pub(super) fn cut(value: &str) -> String {
    let mut head: String = value.chars().take(SHOWN_VALUE_CHARS).collect();
    if head.len() < value.len() {
        head.push('…');
    }
    head
}
