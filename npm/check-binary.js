// Run by each platform package's `prepack`: a package without its binary is refused, never packed.
// The binary is put into bin/plancheck by .ci/release-build.sh before `npm pack`.
"use strict";
const fs = require("fs");
const path = require("path");
const binary = path.join(process.cwd(), "bin", "plancheck");
try {
  fs.accessSync(binary, fs.constants.X_OK);
  if (fs.statSync(binary).size < 1024 * 1024) {
    throw new Error("smaller than 1 MiB, not a plancheck build");
  }
} catch (e) {
  console.error(
    `plancheck: refusing to pack ${process.env.npm_package_name || process.cwd()} ` +
      `without its binary at bin/plancheck (${e.message}); ` +
      "build it with .ci/release-build.sh OUT_DIR, which packs the npm packages"
  );
  process.exit(1);
}
