//! The plan baselines `plancheck accept` records in the project (`baselines/NAME.SCOPE.plan`).

use std::path::{Path, PathBuf};

use crate::error::OutputFailure;
use crate::files::Folder;

/// The project's `baselines/` folder, open for recording.
pub struct Baselines {
    project: Folder,
    /// `baselines/` as the user named the project folder.
    pub shown: PathBuf,
}

impl Baselines {
    /// The project folder as named; `baselines/` in it made when missing, never through a link.
    pub fn open(dir: &Path) -> Result<Baselines, OutputFailure> {
        let project = Folder::open(dir).map_err(|e| OutputFailure(e.to_string()))?;
        project
            .folder(Path::new("baselines"), true)
            .map_err(|e| OutputFailure(e.to_string()))?;
        Ok(Baselines {
            project,
            shown: dir.join("baselines"),
        })
    }

    /// Records one check's baseline, replacing the one there: never written through a link.
    pub fn write(&self, read_path: &str, scope: &str, text: &str) -> Result<(), OutputFailure> {
        let rel = crate::model::baseline_path(read_path, scope);
        self.project
            .replace(Path::new(&rel), text.as_bytes())
            .map_err(|e| OutputFailure(e.to_string()))
    }
}
