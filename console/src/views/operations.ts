/**
 * Operations: runs and their traces with step timings (`GET /api/runs`, the trace door), the
 * interactions waiting for an answer with Answer and Cancel (`/api/interactions/pending`, …), the
 * internal notifications feed, and the team's inbox figures (src/views/team.ts). Each panel appears
 * only when the key passes its door; the interactions panel is also tried for an admin when `me`
 * does not list its door, so a missing door shows the API's own answer rather than nothing.
 */
import { call, path } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, focus, h } from "../dom";
import { can, mayTry } from "../session";
import { announce, busy, errorBox, loading, threadHref, when } from "../ui";
import { teamPanel } from "./team";

interface Run {
  trace_id: string;
  kind: string;
  trigger: string;
  target: { kind: string; name: string; version: string | null };
  route_name: string | null;
  thread_id: string | null;
  started_at: string;
  duration_ms: number;
  outcome: string;
  step_count: number;
}

interface Trace extends Run {
  error: string | null;
  steps: Array<{ kind: string; name: string; started_at: string; duration_ms: number; outcome: string; error: string | null }>;
  steps_dropped: number;
}

interface Interaction {
  interaction_id: string;
  status: string;
  question: string;
  options: Array<{ id: string; text: string; description?: string }> | null;
  target: { kind: string; name: string };
  created_at: string;
  expires_at: string;
}

export function renderOperations(main: HTMLElement, traceId: string | null): void {
  const title = h("h1", { id: "view-title" }, "Operations");
  const sections: Child[] = [];
  if (can(DOORS.runs)) sections.push(runsPanel(traceId));
  if (mayTry(DOORS.pending)) sections.push(interactionsPanel());
  if (can(DOORS.notifications)) sections.push(notificationsPanel());
  if (can(DOORS.metrics)) sections.push(teamPanel());
  if (!sections.length) sections.push(h("p", { class: "muted" }, "This key may not read runs, interactions, notifications or the team's figures."));
  main.replaceChildren(title, h("div", { class: "ops" }, sections));
  focus(traceId ? main.querySelector<HTMLElement>("#trace-title") : title);
}

function runsPanel(traceId: string | null): HTMLElement {
  const err = errorBox();
  const table = h("div", { class: "table-wrap" }, loading("runs"));
  const trace = h("section", { class: "trace", "aria-labelledby": "trace-title" });
  const box = h("section", { class: "card", "aria-labelledby": "runs-title" }, h("h2", { id: "runs-title" }, "Runs"), err.el, table, trace);
  void call<{ items: Run[]; total: number }>("GET", DOORS.runs[1], { query: { pageSize: 20 } })
    .then((got) => {
      const rows = got.items.map((r) =>
        h(
          "tr",
          null,
          h("td", null, when(r.started_at)),
          h("td", null, r.kind, " · ", r.trigger),
          h("td", null, `${r.target.kind} ${r.target.name}`),
          h("td", null, r.outcome),
          h("td", { class: "num" }, `${r.duration_ms} ms`),
          h(
            "td",
            null,
            can(DOORS.trace)
              ? h("a", { href: `#/operations/runs/${encodeURIComponent(r.trace_id)}` }, `${r.step_count} step${r.step_count === 1 ? "" : "s"}`)
              : String(r.step_count),
          ),
        ),
      );
      fill(
        table,
        h(
          "table",
          null,
          h("caption", null, `${got.total} runs (newest 20; the index trails runs by about a second)`),
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              ["Started", "Kind", "Target", "Outcome", "Duration", "Trace"].map((c) => h("th", { scope: "col" }, c)),
            ),
          ),
          h("tbody", null, rows.length ? rows : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No runs yet."))),
        ),
      );
    })
    .catch((e) => {
      fill(table);
      err.show(e);
    });
  if (traceId && can(DOORS.trace)) void loadTrace(trace, traceId);
  return box;
}

async function loadTrace(box: HTMLElement, traceId: string): Promise<void> {
  const err = errorBox();
  fill(box, h("h3", { id: "trace-title" }, "Trace ", h("span", { class: "name" }, traceId)), loading("the trace"));
  let t: Trace;
  try {
    t = await call<Trace>("GET", path(DOORS.trace[1], { trace_id: traceId }));
  } catch (e) {
    err.show(e);
    fill(box, h("h3", { id: "trace-title" }, "Trace ", h("span", { class: "name" }, traceId)), err.el);
    return;
  }
  const total = Math.max(1, t.duration_ms);
  const start = Date.parse(t.started_at);
  const steps = t.steps.map((s) =>
    h(
      "tr",
      null,
      h("td", null, s.kind),
      h("td", null, s.name),
      h("td", { class: "num" }, `+${Math.max(0, Date.parse(s.started_at) - start)} ms`),
      h("td", { class: "num" }, `${s.duration_ms} ms`),
      h(
        "td",
        null,
        h("meter", { min: 0, max: total, value: Math.min(s.duration_ms, total), "aria-label": `${s.name}: ${s.duration_ms} of ${t.duration_ms} ms` }),
      ),
      h("td", null, s.outcome, s.error ? h("span", { class: "reason" }, ` ${s.error}`) : null),
    ),
  );
  fill(
    box,
    h("h3", { id: "trace-title", tabindex: -1 }, "Trace ", h("span", { class: "name" }, traceId)),
    h(
      "p",
      null,
      `${t.kind} (${t.trigger}) of ${t.target.kind} ${t.target.name} · ${t.outcome} · ${t.duration_ms} ms · `,
      when(t.started_at),
      t.route_name && t.thread_id ? [" · ", h("a", { href: threadHref(t.route_name, t.thread_id) }, "open its thread")] : null,
    ),
    t.error ? h("p", { class: "reason" }, "Error: ", t.error) : null,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        null,
        h("caption", null, `Steps${t.steps_dropped ? ` (${t.steps_dropped} more not kept)` : ""}`),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Kind", "Name", "Start", "Duration", "Share of the run", "Outcome"].map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h("tbody", null, steps.length ? steps : h("tr", null, h("td", { colspan: 6, class: "muted" }, "No steps."))),
      ),
    ),
  );
}

function interactionsPanel(): HTMLElement {
  const err = errorBox();
  const list = h("ol", { class: "interactions", "aria-label": "Pending interactions" });
  const reload = h("button", { type: "button" }, "Reload");
  const box = h(
    "section",
    { class: "card", "aria-labelledby": "pending-title" },
    h("h2", { id: "pending-title" }, "Pending interactions"),
    reload,
    err.el,
    list,
  );

  async function load(): Promise<void> {
    const got = await call<{ items: Interaction[]; total: number }>("GET", DOORS.pending[1], { query: { pageSize: 50 } });
    const items: Child[] = got.items.map((i) => interactionItem(i, load));
    fill(list, items.length ? items : h("li", { class: "muted" }, "Nothing is waiting for an answer."));
  }
  reload.addEventListener("click", () => void busy(reload, err, load));
  fill(list, h("li", null, loading("pending interactions")));
  void load().catch((e) => {
    fill(list);
    err.show(e);
  });
  return box;
}

function interactionItem(i: Interaction, reload: () => Promise<void>): HTMLElement {
  const err = errorBox();
  const answerDoor = path(DOORS.answer[1], { interaction_id: i.interaction_id });
  const answer = async (button: HTMLButtonElement, body: Record<string, unknown>) =>
    busy(button, err, async () => {
      await call("POST", answerDoor, { body });
      announce("Answer sent.");
      await reload();
    });
  const optionButtons = (i.options ?? []).map((o) => {
    const b = h("button", { type: "button" }, o.text);
    b.addEventListener("click", () => void answer(b, { option_id: o.id }));
    return b;
  });
  const text = h("input", { type: "text", name: "answer", autocomplete: "off", required: true });
  const submit = h("button", { type: "submit", class: "primary" }, "Answer");
  const form = h("form", { class: "inline" }, field("Answer", text), submit);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void answer(submit, { text: text.value });
  });
  const actions: Child[] = [];
  if (mayTry(DOORS.answer))
    actions.push(optionButtons.length ? h("div", { class: "options", role: "group", "aria-label": "Options" }, optionButtons) : null, form);
  if (mayTry(DOORS.cancel)) {
    const cancel = h("button", { type: "button", class: "danger" }, "Cancel interaction");
    cancel.addEventListener("click", () => {
      if (!window.confirm("Cancel this interaction? The waiting run is told it was cancelled.")) return;
      void busy(cancel, err, async () => {
        await call("POST", path(DOORS.cancel[1], { interaction_id: i.interaction_id }), { body: {} });
        announce("Interaction cancelled.");
        await reload();
      });
    });
    actions.push(cancel);
  }
  return h(
    "li",
    { class: "interaction" },
    h("p", { class: "text" }, i.question),
    h("p", { class: "muted" }, `${i.target.kind} ${i.target.name} · asked `, when(i.created_at), " · expires ", when(i.expires_at)),
    actions,
    err.el,
  );
}

function notificationsPanel(): HTMLElement {
  const err = errorBox();
  const list = h("ol", { class: "notifications", "aria-label": "Notifications" });
  const box = h("section", { class: "card", "aria-labelledby": "notif-title" }, h("h2", { id: "notif-title" }, "Notifications"), err.el, list);
  fill(list, h("li", null, loading("notifications")));
  void call<{ notifications: Array<{ id: string; created_at: string; message: string; audience?: string; recipient?: string }> }>("GET", DOORS.notifications[1])
    .then((got) => {
      const items = got.notifications
        .slice(0, 50)
        .map((n) =>
          h(
            "li",
            null,
            h("p", { class: "text" }, n.message),
            h("p", { class: "muted" }, when(n.created_at), n.audience ? ` · to ${n.audience}` : "", n.recipient ? ` · via ${n.recipient}` : ""),
          ),
        );
      fill(
        list,
        items.length
          ? [h("li", { class: "muted" }, `${got.notifications.length} in the feed (newest 50 shown)`), items]
          : h("li", { class: "muted" }, "No notifications."),
      );
    })
    .catch((e) => {
      fill(list);
      err.show(e);
    });
  return box;
}
