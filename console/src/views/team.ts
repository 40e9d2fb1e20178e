/**
 * The team's figures on the Operations screen (docs/inbox.md "Team figures"): the `inbox` section
 * of `GET /api/observability/metrics` over a chosen window, as one table per route and one per
 * operator (handoffs, the handoff rate, mean first response, wait and resolution, resolved and
 * auto-resolved threads, satisfaction), and the labels given most. A restricted caller's `inbox`
 * is null: the panel then stays hidden, as for a key that may not read the door.
 */
import { call } from "../api";
import { DOORS } from "../doors";
import { type Child, field, fill, h, select } from "../dom";
import { busy, duration, errorBox, loading } from "../ui";

interface Mean {
  count: number;
  avg: number | null;
}

interface Figures {
  handoffs: number;
  first_response_ms: Mean;
  waiting_ms: Mean;
  resolution_ms: Mean;
  resolved: number;
  auto_resolved: number;
  satisfaction: Mean;
}

interface RouteFigures extends Figures {
  route_name: string;
  turns: number;
  handoff_rate: number | null;
}

interface Inbox {
  total: Omit<RouteFigures, "route_name">;
  by_route: RouteFigures[];
  by_operator: Array<Figures & { user_id: string }>;
  by_label: Array<{ label: string; labelled: number }>;
}

const WINDOWS: Array<[string, string]> = [
  ["1h", "the last hour"],
  ["8h", "the last 8 hours"],
  ["1d", "the last day"],
  ["7d", "the last 7 days"],
];
const TOP_LABELS = 5;

/** A mean time, short ("—" without a sample), with its sample count for whoever hovers. */
function time(m: Mean): HTMLElement {
  return h("td", { class: "num", title: `${m.count} sample${m.count === 1 ? "" : "s"}` }, m.avg === null ? "—" : duration(m.avg));
}

/** The cells every row shares, after its name (and the route's handoff rate). */
function cells(f: Figures): Child[] {
  return [
    time(f.first_response_ms),
    time(f.waiting_ms),
    time(f.resolution_ms),
    h("td", { class: "num resolved" }, `${f.resolved} / ${f.auto_resolved}`),
    h("td", { class: "num" }, f.satisfaction.avg === null ? "—" : `${f.satisfaction.avg} (${f.satisfaction.count})`),
  ];
}

const SHARED = ["First response", "Wait", "Resolution", "Resolved / auto", "Satisfaction (n)"];

function table(caption: string, head: string[], rows: HTMLElement[], foot: HTMLElement | null, empty: string): HTMLElement {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "team" },
      h("caption", null, caption),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          head.map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      h("tbody", null, rows.length ? rows : h("tr", null, h("td", { colspan: head.length, class: "muted" }, empty))),
      foot ? h("tfoot", null, foot) : null,
    ),
  );
}

function rate(r: number | null): string {
  return r === null ? "—" : `${Math.round(r * 100)}%`;
}

function render(box: HTMLElement, inbox: Inbox, span: string): void {
  const routes = inbox.by_route.map((r) =>
    h(
      "tr",
      { "data-route": r.route_name },
      h("th", { scope: "row" }, r.route_name),
      h("td", { class: "num" }, r.handoffs),
      h("td", { class: "num" }, rate(r.handoff_rate)),
      cells(r),
    ),
  );
  const t = inbox.total;
  const total = h(
    "tr",
    null,
    h("th", { scope: "row" }, "All routes"),
    h("td", { class: "num" }, t.handoffs),
    h("td", { class: "num" }, rate(t.handoff_rate)),
    cells(t),
  );
  const operators = inbox.by_operator.map((o) =>
    h("tr", { "data-operator": o.user_id }, h("th", { scope: "row" }, o.user_id), h("td", { class: "num" }, o.handoffs), cells(o)),
  );
  const labels = inbox.by_label.slice(0, TOP_LABELS);
  const over = WINDOWS.find(([w]) => w === span)?.[1] ?? span;
  fill(
    box,
    table(
      `By route, over ${over} (mean times)`,
      ["Route", "Handoffs", "Handoff rate", ...SHARED],
      routes,
      routes.length ? total : null,
      "No route had turns or inbox activity.",
    ),
    table(`By operator, over ${over} (handoffs are takeovers)`, ["Operator", "Handoffs", ...SHARED], operators, null, "No operator activity."),
    h(
      "p",
      { class: "top-labels" },
      "Top labels: ",
      labels.length
        ? labels.map((l, i) => [i ? ", " : "", h("span", { class: "chip label" }, l.label), ` ${l.labelled}`])
        : h("span", { class: "muted" }, "none"),
    ),
  );
}

/** The Team panel: hidden until the figures come, and for good when the caller may not see them. */
export function teamPanel(): HTMLElement {
  const err = errorBox();
  const body = h("div", null, loading("the team's figures"));
  const windowPick = select("window", WINDOWS, "1d");
  const show = h("button", { type: "submit" }, "Show");
  const form = h("form", { class: "inline", "aria-label": "Team figures window" }, field("Window", windowPick), show);
  const box = h("section", { class: "card", "aria-labelledby": "team-title", hidden: true }, h("h2", { id: "team-title" }, "Team"), form, err.el, body);
  async function load(): Promise<void> {
    const span = windowPick.value;
    const got = await call<{ inbox: Inbox | null }>("GET", DOORS.metrics[1], { query: { window: span } });
    // The deployment-wide figures are not this caller's to see.
    if (!got.inbox) {
      box.remove();
      return;
    }
    box.hidden = false;
    render(body, got.inbox, span);
  }
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void busy(show, err, load);
  });
  void load().catch((e) => {
    box.hidden = false;
    fill(body);
    err.show(e);
  });
  return box;
}
