//! `plancheck fixtures load`: the reference board, into a database of the user's.

use super::target;
use crate::cli::LoadArgs;
use crate::{db, exit_codes};

pub(super) async fn load(args: LoadArgs) -> crate::error::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let target = target(&args.connect)?;
    let client = target.connect().await?;
    db::fixtures::load_into(&client, scale, false, args.replace).await?;
    Ok(exit_codes::PASS)
}
