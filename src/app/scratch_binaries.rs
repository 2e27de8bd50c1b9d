//! `plancheck scratch-binaries`: the measured server's major version, and the local server
//! binaries of that major the scratch copy would be made with, for the CI templates' step that
//! installs them where there are none (`ci/server-binaries.sh`).

use super::{target, write_stdout};
use crate::cli::ScratchBinariesArgs;
use crate::db::check::Settings;
use crate::term::say;
use crate::{db, exit_codes, report};

pub(super) async fn scratch_binaries(args: ScratchBinariesArgs) -> crate::error::Result<i32> {
    let target = target(&args.connect)?;
    let client = target.connect().await?;
    db::check::bound_session(&client, &Settings::default()).await?;
    let major = db::preflight::server_major(&client).await?;
    // The same search a check makes, so what is printed is what the copy would use.
    let found = db::scratch::local_binaries(major);
    if let Err(why) = &found {
        say!("{}", report::scratch::no_binaries_note(why));
    }
    write_stdout(&report::scratch::binaries(major, found.as_deref().ok()))?;
    Ok(exit_codes::PASS)
}
