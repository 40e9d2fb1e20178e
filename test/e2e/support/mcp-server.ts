/**
 * Runs the shipped example MCP server (scripts/example-mcp-server.mjs, the one docs/mcp.md uses)
 * on a free port for an end-to-end test, and stops it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { ROOT, freePort } from "../harness";

export interface ExampleMcpServer {
  url: string;
  logs: () => string;
  stop: () => Promise<void>;
}

export async function startExampleMcpServer(opts: { token?: string } = {}): Promise<ExampleMcpServer> {
  const port = await freePort();
  const args = ["scripts/example-mcp-server.mjs", "--port", String(port), ...(opts.token ? ["--token", opts.token] : [])];
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  child.stderr?.on("data", (d) => (log += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`example MCP server did not start:\n${log}`)), 15_000);
    child.stdout?.on("data", (d) => {
      log += d.toString();
      const m = /listening (\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`example MCP server exited (${code}):\n${log}`));
    });
  });
  return {
    url,
    logs: () => log,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
