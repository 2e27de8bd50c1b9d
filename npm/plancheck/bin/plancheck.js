#!/usr/bin/env node
// The launcher: runs the plancheck binary of this platform's package (installed beside this one
// as an optional dependency, as esbuild and squawk ship theirs), with this process's arguments,
// standard streams and environment, and exits with its status.
"use strict";
const { spawn } = require("child_process");
const os = require("os");

const packages = {
  "linux x64": "@plancheck/linux-x64",
  "linux arm64": "@plancheck/linux-arm64",
  "darwin x64": "@plancheck/darwin-x64",
  "darwin arm64": "@plancheck/darwin-arm64",
};
const platform = `${process.platform} ${process.arch}`;
const name = packages[platform];
if (!name) {
  console.error(`plancheck: no binary for ${platform}; build it with cargo install --locked`);
  process.exit(1);
}
let binary;
try {
  binary = require.resolve(`${name}/bin/plancheck`);
} catch (e) {
  console.error(
    `plancheck: the package ${name} is not installed (optional dependencies left out?): ` +
      "install it, or build plancheck with cargo install --locked"
  );
  process.exit(1);
}
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
// Ctrl-C in a terminal reaches plancheck itself (the same process group), which stops in order:
// the launcher only waits for it. SIGTERM, as a CI runner cancelling a job sends it to the
// launcher, is passed on.
process.on("SIGINT", () => {});
process.on("SIGTERM", () => child.kill("SIGTERM"));
child.on("error", (e) => {
  console.error(`plancheck: could not run ${binary}: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.exit(128 + (os.constants.signals[signal] || 0));
  }
  process.exit(code === null ? 1 : code);
});
