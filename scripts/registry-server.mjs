// The registry's side of the registry test (registry-test.mjs): a local verdaccio installed once and started on
// a free port (everything but @nuvec/* proxied from registry.npmjs.org), and every package published to it
// with the release flow from a copy of this checkout. Apart from the installs, which only read from it.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { quietEnvironment, runPnpm } from "./pnpm.mjs";
import { fail, log, NODE_FETCH, root, run, tools, VERDACCIO } from "./registry-common.mjs";

/** verdaccio's entry point, installed once into the tools folder. */
function verdaccio() {
  const entry = join(tools, "node_modules", "verdaccio", "bin", "verdaccio");
  if (existsSync(entry)) return entry;
  log(`installing verdaccio ${VERDACCIO} (node-fetch ${NODE_FETCH}) into ${tools}`);
  mkdirSync(tools, { recursive: true });
  writeFileSync(
    join(tools, "package.json"),
    `${JSON.stringify(
      {
        name: "nuvec-registry-tools",
        private: true,
        dependencies: { verdaccio: VERDACCIO },
        overrides: { "node-fetch": NODE_FETCH },
      },
      null,
      2,
    )}\n`,
  );
  const installed = run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: tools });
  if (installed.status !== 0 || !existsSync(entry)) fail(`installing verdaccio failed:\n${installed.output}`);
  return entry;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/**
 * The environment verdaccio reaches registry.npmjs.org with: where npm is configured with certificate
 * authorities of its own (`cafile`, as behind a proxy that signs with a private authority), Node.js must trust
 * them too, or every proxied package reads as missing.
 */
function uplinkEnvironment() {
  if (process.env.NODE_EXTRA_CA_CERTS) return process.env;
  const cafile = run("npm", ["config", "get", "cafile"]).output.trim();
  if (!cafile || cafile === "null" || cafile === "undefined" || !existsSync(cafile)) return process.env;
  return { ...process.env, NODE_EXTRA_CA_CERTS: cafile };
}

/** Starts verdaccio with its storage in `folder`; resolves with its URL and the child process once it answers. */
export async function startRegistry(folder) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = join(folder, "config.yaml");
  writeFileSync(
    config,
    [
      `storage: ${join(folder, "storage")}`,
      "auth:",
      "  htpasswd:",
      `    file: ${join(folder, "htpasswd")}`,
      "uplinks:",
      "  npmjs:",
      "    url: https://registry.npmjs.org/",
      "    timeout: 60s",
      "packages:",
      "  '@nuvec/*':",
      "    access: $all",
      "    publish: $authenticated",
      "  '**':",
      "    access: $all",
      "    publish: $authenticated",
      "    proxy: npmjs",
      "log: { type: stdout, format: pretty, level: error }",
      "",
    ].join("\n"),
  );
  const output = [];
  const child = spawn(process.execPath, [verdaccio(), "--config", config, "--listen", `127.0.0.1:${port}`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: quietEnvironment(uplinkEnvironment()),
  });
  child.stdout.on("data", (chunk) => output.push(chunk));
  child.stderr.on("data", (chunk) => output.push(chunk));
  for (let attempt = 0; attempt < 120; attempt += 1) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}-/ping`)).ok) return { url, child, output };
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  child.kill();
  fail(`verdaccio did not start:\n${Buffer.concat(output).toString()}`);
}

/** Registers a user and returns an npmrc (registry and token) for publishing. */
export async function publisherNpmrc(url, folder) {
  const response = await fetch(`${url}-/user/org.couchdb.user:nuvec`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "nuvec", password: "registry-test", type: "user", roles: [] }),
  });
  const body = await response.json();
  if (!response.ok || !body.token) fail(`could not register a publisher: ${JSON.stringify(body)}`);
  const npmrc = join(folder, "publisher.npmrc");
  const host = url.replace(/^https?:/, "");
  writeFileSync(npmrc, `registry=${url}\n${host}:_authToken=${body.token}\nupdate-notifier=false\n`);
  return npmrc;
}

/** A copy of this checkout's files (tracked and untracked, not ignored), as a git repository of its own. */
export function copyOfCheckout(destination) {
  const listed = run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"]);
  if (listed.status !== 0) fail(`git ls-files failed: ${listed.output}`);
  for (const file of listed.output.split("\0").filter(Boolean)) {
    const source = join(root, file);
    if (!existsSync(source)) continue; // deleted in the working tree
    mkdirSync(dirname(join(destination, file)), { recursive: true });
    cpSync(source, join(destination, file));
  }
  const git = (args) => run("git", args, { cwd: destination });
  git(["init", "-q"]);
  git(["add", "-A"]);
  git(["-c", "user.name=registry test", "-c", "user.email=registry-test@localhost", "commit", "-qm", "copy"]);
}

/** Publishes every package from `workspace` with the release flow; returns the versions published. */
export function publishWithReleaseFlow(workspace, url, npmrc) {
  const pnpm = (args, env = {}) =>
    runPnpm(args, { cwd: workspace, env: { ...process.env, ...env }, stdio: "inherit" }).status;
  log("installing the copy's workspace (pnpm install --frozen-lockfile)");
  if (pnpm(["install", "--frozen-lockfile", "--prefer-offline"]) !== 0)
    fail("pnpm install failed in the copy");
  const pending = readdirSync(join(workspace, ".changeset")).filter(
    (file) => file.endsWith(".md") && file !== "README.md",
  );
  if (pending.length > 0) {
    log(`pnpm version-packages (${pending.length} pending changesets)`);
    if (pnpm(["version-packages"]) !== 0) fail("pnpm version-packages failed");
    if (pnpm(["install", "--no-frozen-lockfile", "--prefer-offline"]) !== 0)
      fail("pnpm install after versioning failed");
  }
  log(`pnpm release to ${url}`);
  const registryEnv = { npm_config_registry: url, npm_config_userconfig: npmrc };
  if (pnpm(["release", "--skip-prebuilds-test"], registryEnv) !== 0) fail("pnpm release failed");

  // The platform packages the release left out (see the header): placeholders, so the registry has every one.
  const placeholders = join(workspace, "..", "placeholders");
  mkdirSync(placeholders, { recursive: true });
  for (const name of readdirSync(join(workspace, "packages"))) {
    const folder = join(workspace, "packages", name);
    const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
    if (manifest.private || !manifest.os) continue;
    const view = run("npm", ["view", `${manifest.name}@${manifest.version}`, "version"], {
      env: registryEnv,
    });
    if (view.status === 0 && view.output.trim() !== "") continue;
    log(
      `${manifest.name}@${manifest.version} was not packed here: published as a placeholder without its addon`,
    );
    const packed = run("npm", ["pack", "--ignore-scripts", "--pack-destination", placeholders], {
      cwd: folder,
    });
    const tarball = readdirSync(placeholders).find((file) => file.includes(name) && file.endsWith(".tgz"));
    if (packed.status !== 0 || !tarball)
      fail(`packing the placeholder of ${manifest.name} failed: ${packed.output}`);
    const published = run("npm", ["publish", join(placeholders, tarball), "--access", "public"], {
      env: registryEnv,
    });
    if (published.status !== 0)
      fail(`publishing the placeholder of ${manifest.name} failed: ${published.output}`);
  }
  return JSON.parse(readFileSync(join(workspace, "packages", "device", "package.json"), "utf8")).version;
}

/**
 * A folder holding only node, npm, npx and sh (npx runs its command through sh): the PATH of the installs, no
 * compiler, make or python.
 */
