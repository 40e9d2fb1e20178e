/**
 * Failures: the failed deliveries across every route (`GET /api/conversations/messages/failed`,
 * admin only), newest first, each with its reason (the record's error) and a link to its thread.
 */
import { call } from "../api";
import { DOORS } from "../doors";
import { type Child, fill, focus, h } from "../dom";
import { busy, errorBox, loading, statusChip, threadHref, when } from "../ui";
import type { RecordView } from "./thread";

export function renderFailures(main: HTMLElement): void {
  const list = h("ol", { class: "failures", "aria-label": "Failed deliveries" });
  const err = errorBox();
  const title = h("h1", { id: "view-title" }, "Failed deliveries");
  const reload = h("button", { type: "button" }, "Reload");
  let page = 1;
  let items: RecordView[] = [];

  async function load(p: number): Promise<void> {
    const got = await call<{ items: RecordView[]; total: number; next_page: number | null }>("GET", DOORS.failed[1], { query: { page: p, pageSize: 20 } });
    page = p;
    items = p === 1 ? got.items : [...items, ...got.items];
    const rows: Child[] = items.map((r) =>
      h(
        "li",
        { class: "failure", "data-message-id": r.message_id },
        h(
          "p",
          null,
          statusChip(r.status),
          " ",
          h("strong", null, r.route_name),
          " · ",
          when(r.updated_at),
          typeof r.attempts === "number" ? ` · ${r.attempts} attempt${r.attempts === 1 ? "" : "s"}` : "",
        ),
        h("p", { class: "reason" }, "Reason: ", r.error ?? "(no reason recorded)"),
        h("p", { class: "muted" }, r.answer ? `Answer: ${r.answer.length > 140 ? `${r.answer.slice(0, 140)}…` : r.answer}` : ""),
        h("a", { href: threadHref(r.route_name, r.thread_id) }, "Open thread ", h("span", { class: "visually-hidden" }, r.thread_id)),
      ),
    );
    if (!rows.length) rows.push(h("li", { class: "muted" }, "No failed deliveries."));
    if (got.next_page) {
      const more = h("button", { type: "button" }, "More");
      more.addEventListener("click", () => void busy(more, err, () => load(page + 1)));
      rows.push(h("li", null, more));
    }
    fill(list, h("li", { class: "muted" }, `${got.total} failed deliver${got.total === 1 ? "y" : "ies"} kept`), rows);
  }

  reload.addEventListener("click", () => void busy(reload, err, () => load(1)));
  main.replaceChildren(
    title,
    h("p", { class: "muted" }, "Records whose delivery failed for good, newest first. They are kept until their retention ends."),
    reload,
    err.el,
    list,
  );
  fill(list, h("li", null, loading("failures")));
  focus(title);
  void load(1).catch((e) => {
    fill(list);
    err.show(e);
  });
}
