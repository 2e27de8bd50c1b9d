//! `plancheck demo`: a throwaway server, the reference board, every check, all removed after.

use super::{RunOptions, filter, run_checks};
use crate::cli::DemoArgs;
use crate::project::{self, Source};
use crate::report::stderr;
use crate::server::provider::Board;
use crate::term::say;
use crate::{db, stop};

/// The demo's default board size. At this scale (117k posts) every check passes for the same
/// reason it passes on the full board, and the whole demo takes seconds (see the README).
pub const DEMO_SCALE: f64 = 0.05;

pub(super) async fn demo(args: DemoArgs, mut stop: stop::Stop) -> crate::error::Result<i32> {
    let scale = db::fixtures::validate_scale(args.scale)?;
    let project = project::load(&Source::Embedded, &filter(&args.run))?;
    let (mut server, origin, board) = stop::unless_stopped(&mut stop, async {
        Ok(
            crate::server::provider::Throwaway::start(args.server.into(), scale, args.fresh)
                .await?,
        )
    })
    .await?;
    say!("{}", stderr::demo_started(&origin.to_string()));
    let target = server.target("postgres");
    let status = async {
        match &board {
            Board::Cached(path) => {
                say!("{}", stderr::demo_cached_board(scale, path));
            }
            Board::Load { save, not_cached } => {
                if let Some(line) = stderr::demo_building(save.is_some(), not_cached.as_deref()) {
                    say!("{line}");
                }
                stop::unless_stopped(&mut stop, async {
                    let client = target.connect().await?;
                    db::fixtures::load(&client, scale, args.run.quiet).await?;
                    Ok(())
                })
                .await?;
                if let Some(entry) = save {
                    // Saved before the checks run: the cache holds the board as loaded, not as
                    // the checks left it (statistics of their scans).
                    stop::unless_stopped(&mut stop, async { Ok(server.save_board(entry).await?) })
                        .await?;
                }
            }
        }
        let options = RunOptions {
            own_server: true,
            ..RunOptions::default()
        };
        run_checks(&target, &project, &args.run, &options, stop.clone()).await
    }
    .await;
    server.stop().await;
    status
}
