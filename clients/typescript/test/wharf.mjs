// Starts a real `wharf serve` for a test file: a free port, a fresh temporary data folder, and
// (optionally) HS256 auth with `wharf token` to mint tokens. The binary is $WHARF_BIN, else the
// newest of target/release/wharf and target/debug/wharf at the repository root.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

export function wharfBinary() {
  if (process.env.WHARF_BIN) return process.env.WHARF_BIN;
  const candidates = ["release", "debug"]
    .map((p) => join(root, "target", p, "wharf"))
    .filter((p) => existsSync(p))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (candidates.length === 0) {
    throw new Error(`no wharf binary: run 'cargo build --release --bin wharf' in ${root} or set WHARF_BIN`);
  }
  return candidates[0];
}

/** A free TCP port on 127.0.0.1 (free when asked; bind it soon). */
export function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/** Whether `url/readyz` answered 200 within `deadlineMs` while `child` runs. */
export async function waitReady(url, child, deadlineMs) {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    if (child.exitCode !== null) return false;
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/**
 * Starts Wharf; `secret` turns auth on. Returns { url, token(sub, scope), stop() }.
 * Retries on another port when the chosen one was taken between probe and bind.
 */
export async function startWharf({ secret } = {}) {
  const bin = wharfBinary();
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), "wharf-ts-"));
    const env = { ...process.env, RUST_LOG: process.env.RUST_LOG ?? "warn" };
    delete env.WHARF_AUTH_HS256_SECRET;
    if (secret) env.WHARF_AUTH_HS256_SECRET = secret;
    const child = spawn(bin, ["serve", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir, "--fsync", "never"], {
      env,
      stdio: ["ignore", "ignore", "pipe"],
    });
    // Never outlive the test process: on its exit, and on the signals the test runner sends a
    // file that timed out (a signal skips "exit" handlers).
    const killOnExit = () => child.kill("SIGKILL");
    process.once("exit", killOnExit);
    for (const sig of ["SIGTERM", "SIGINT"]) {
      process.once(sig, () => {
        killOnExit();
        process.exit(128 + (sig === "SIGTERM" ? 15 : 2));
      });
    }
    let stderr = "";
    child.stderr.on("data", (d) => {
      stderr = (stderr + d).slice(-8192);
    });
    const url = `http://127.0.0.1:${port}`;
    if (await waitReady(url, child, 30_000)) {
      return {
        url,
        token(sub, scope, ttl = "1h") {
          const r = spawnSync(bin, ["token", "--sub", sub, "--scope", scope, "--ttl", ttl], {
            env: { ...process.env, WHARF_AUTH_HS256_SECRET: secret },
            encoding: "utf8",
          });
          if (r.status !== 0) throw new Error(`wharf token failed: ${r.stderr}`);
          return r.stdout.trim();
        },
        async stop() {
          process.off("exit", killOnExit);
          if (child.exitCode === null) {
            const exited = new Promise((r) => child.once("exit", r));
            child.kill("SIGTERM");
            const t = setTimeout(() => child.kill("SIGKILL"), 5000);
            await exited;
            clearTimeout(t);
          }
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    }
    child.kill("SIGKILL");
    rmSync(dataDir, { recursive: true, force: true });
    if (attempt === 5 || !/address|in use/i.test(stderr)) {
      throw new Error(`wharf did not become ready on ${url}:\n${stderr}`);
    }
  }
  throw new Error("unreachable");
}

/** A unique, valid topic name for one test. */
let n = 0;
export function name(prefix) {
  return `${prefix}-${process.pid}-${++n}`;
}

/** Polls `fn` until it returns a truthy value or `ms` pass; returns the last value. */
export async function eventually(fn, ms = 10_000, every = 50) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, every));
  }
}
