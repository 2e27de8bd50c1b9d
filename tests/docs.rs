//! The book's examples, run: every `console` block under `docs/src/` is a command and the output
//! it prints (trycmd), so a page cannot drift from what plancheck does. They need no database:
//! `judge` of the runs saved under `docs/examples/runs/`, `list` of the projects under
//! `docs/examples/`, `init` in a sandbox (the page's `.out/` folder holds the files it writes),
//! and each command's `--help`. Commands run from the repository's root.

#[test]
fn the_books_examples_print_what_the_book_shows() {
    trycmd::TestCases::new()
        // What changes the output, fixed: the table's width, and none of GitHub Actions'
        // annotations or job summary (set empty is unset, to plancheck).
        .env("COLUMNS", "120")
        .env("NO_COLOR", "1")
        .env("GITHUB_ACTIONS", "false")
        .env("GITHUB_STEP_SUMMARY", "")
        .env("GITHUB_WORKSPACE", "")
        .case("docs/src/**/*.md");
}
