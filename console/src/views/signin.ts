/**
 * Sign-in: paste an api key, or redeem a one-time claim link (`POST /api/login/claim`, docs/login.md).
 * A claim link may arrive as `/console/#claim=clm-…`: the fragment never reaches a server or a log,
 * and the console removes it from the address bar at once.
 */
import { call } from "../api";
import { DOORS } from "../doors";
import { field, fill, focus, h } from "../dom";
import { busy, errorBox } from "../ui";

export interface SignInDeps {
  /** Signs in with `key`: loads `me`, throws the API's refusal. */
  signIn: (key: string) => Promise<void>;
}

/** A claim token carried in the fragment (`#claim=…`), removed from the address bar. */
export function takeClaimFromFragment(): string | null {
  const m = /^#claim=([A-Za-z0-9_-]{1,256})$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, "", location.pathname + location.search);
  return m[1];
}

export function renderSignIn(main: HTMLElement, deps: SignInDeps, claimToken: string | null, notice?: string): void {
  const keyErr = errorBox();
  const claimErr = errorBox();
  const keyInput = h("input", { type: "password", name: "api-key", autocomplete: "off", spellcheck: "false", required: true });
  const claimInput = h("input", { type: "text", name: "claim-token", autocomplete: "off", spellcheck: "false", required: true, placeholder: "clm-…" });
  if (claimToken) claimInput.value = claimToken;
  const bootstrap = h("p", { class: "notice", hidden: true });
  const issued = h("section", { class: "card", hidden: true, "aria-labelledby": "issued-title" });

  const keyForm = h(
    "form",
    { class: "card", "aria-labelledby": "key-title" },
    h("h2", { id: "key-title" }, "Sign in with an api key"),
    field("API key", keyInput, "Kept in this browser tab only (session storage) and sent as the x-api-key header."),
    keyErr.el,
    h("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  keyForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const button = keyForm.querySelector("button");
    void busy(button, keyErr, () => deps.signIn(keyInput.value.trim()));
  });

  const claimForm = h(
    "form",
    { class: "card", "aria-labelledby": "claim-title" },
    h("h2", { id: "claim-title" }, "Redeem a claim link"),
    field("Claim token", claimInput, "A one-time token (clm-…) someone made for you with POST /api/auth/claim-links. It mints your key once."),
    claimErr.el,
    h("button", { type: "submit" }, "Redeem claim link"),
  );
  claimForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const button = claimForm.querySelector("button");
    void busy(button, claimErr, async () => {
      const got = await call<{ api_key: string; user_id: string }>(DOORS.claim[0], DOORS.claim[1], { body: { token: claimInput.value.trim() }, auth: false });
      claimInput.value = "";
      // The key exists only in this answer: show it once so the operator can keep it.
      const shown = h("input", { type: "text", readonly: true, value: got.api_key, "aria-describedby": "issued-note" });
      const go = h("button", { type: "button", class: "primary" }, `Continue as ${got.user_id}`);
      const goErr = errorBox();
      go.addEventListener("click", () => void busy(go, goErr, () => deps.signIn(got.api_key)));
      issued.replaceChildren(
        h("h2", { id: "issued-title" }, "Your new key"),
        h("p", { id: "issued-note" }, "This is the only time the key is shown. Copy it somewhere safe: closing this tab forgets it."),
        field("New api key", shown),
        goErr.el,
        go,
      );
      issued.hidden = false;
      focus(shown);
    });
  });

  fill(
    main,
    h("h1", { id: "view-title" }, "Sign in"),
    notice ? h("p", { class: "notice", role: "alert" }, notice) : null,
    bootstrap,
    h("div", { class: "signin" }, keyForm, claimForm, issued),
  );
  focus(claimToken ? claimInput : keyInput);

  void call<{ bootstrap: boolean }>(DOORS.methods[0], DOORS.methods[1], { auth: false })
    .then((m) => {
      if (m.bootstrap) {
        bootstrap.textContent = "No key exists yet. Mint the first admin key with POST /api/keys/bootstrap (README, first walk-through), then sign in with it.";
        bootstrap.hidden = false;
      }
    })
    .catch(() => {
      // Only a hint; the forms work without it.
    });
}
