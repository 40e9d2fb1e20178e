// `npm start` output filter: drops workerd's internal dumps for outbound failures the service has
// already handled and logged itself.
//
// Under `wrangler dev`, an outbound fetch that fails at DNS or TLS (any callback to a public name
// on an offline machine, a receiver with an untrusted certificate) makes workerd print its own
// internal-error report: a `✘ [ERROR] e = kj/…` line with a native stack, then, for a request
// with a body, `Uncaught Error: internal error; reference = …`, and sometimes a `NOSENTRY …` alarm
// note. None of it can be caught from JavaScript, none of it happens when deployed, and the
// service has already turned the failure into a retry and one structured line
// (`{"event":"delivery_attempt_failed",…}`). Everything else passes through untouched.
// START_RAW_OUTPUT=1 turns the filter off.

const ANSI = /\u001b\[[0-9;]*m/g;

/** A line that opens one of workerd's internal reports (matched without colour codes). */
export function opensInternalReport(line) {
  const plain = line.replace(ANSI, "");
  return /\[ERROR\]\s+e = kj\//.test(plain) || /\[ERROR\]\s+Uncaught Error: internal error; reference = /.test(plain) || /^NOSENTRY /.test(plain);
}

/** A line that continues a report: blank, or the native stack / error context workerd appends. */
function continuesReport(line) {
  const plain = line.replace(ANSI, "");
  return plain.trim() === "" || /^\s+stack: /.test(plain);
}

/**
 * Returns `push(chunk)` and `end()`; complete lines are passed to `write` unless they belong to a
 * workerd internal report. A partial last line waits for the rest of it (or for `end`).
 */
export function createDevOutputFilter(write) {
  let pending = "";
  let inReport = false;
  const line = (l) => {
    if (opensInternalReport(l)) {
      inReport = true;
      return;
    }
    if (inReport && continuesReport(l)) return;
    inReport = false;
    write(`${l}\n`);
  };
  return {
    push(chunk) {
      pending += chunk;
      let nl;
      while ((nl = pending.indexOf("\n")) !== -1) {
        line(pending.slice(0, nl));
        pending = pending.slice(nl + 1);
      }
    },
    end() {
      if (pending) line(pending);
      pending = "";
    },
  };
}
