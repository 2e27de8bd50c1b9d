//! The plan model both sides share: the typed EXPLAIN document ([`explain`]), read once into
//! the measurement, and the plan analysis the measuring side and the judge both need
//! ([`replans`]: which re-plans a check needs, which questions are left to the scratch copy).

pub mod explain;
pub mod replans;
mod stream;
