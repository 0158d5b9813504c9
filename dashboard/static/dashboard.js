// Cairn dashboard client: refreshes a live page's <main> every few seconds (the server renders
// it, escaped) and follows the log tails. Server data only ever reaches the page as text or as
// server-escaped HTML; nothing here evaluates it.
"use strict";

(function () {
  const main = document.getElementById("live");
  const refreshMs = Number(document.body.dataset.refreshMs || 0);

  /** Leave the page alone while someone is using it: typing a filter, confirming a cancel. */
  function busy() {
    if (!main) return true;
    if (main.contains(document.activeElement) && document.activeElement !== document.body) return true;
    if (main.querySelector("details[open]")) return true;
    for (const input of main.querySelectorAll("input, select")) {
      if (input instanceof HTMLInputElement && input.type !== "hidden" && input.value !== input.defaultValue)
        return true;
      if (input instanceof HTMLSelectElement) {
        const selected = Array.from(input.options).find((o) => o.defaultSelected);
        if ((selected ? selected.value : input.options[0] && input.options[0].value) !== input.value)
          return true;
      }
    }
    return false;
  }

  let last = "";

  async function refresh() {
    if (busy() || document.hidden) return;
    try {
      const response = await fetch(location.href, {
        headers: { "X-Cairn-Fragment": "main" },
        cache: "no-store",
      });
      if (!response.ok) return;
      const text = await response.text();
      if (text !== last && !busy()) {
        last = text;
        main.innerHTML = text;
        document.body.dataset.refreshedAt = String(Date.now());
      }
    } catch {
      // The server is restarting or gone: try again at the next tick.
    }
  }

  if (main && refreshMs > 0) setInterval(refresh, refreshMs);

  /** Appends lines written since the token, while "follow" is checked. */
  async function follow(pre, checkbox) {
    if (!checkbox.checked) return;
    const after = pre.dataset.next || "";
    const url = pre.dataset.src + (after === "" ? "" : "&after=" + encodeURIComponent(after));
    try {
      const response = await fetch(url, { cache: "no-store" });
      if (!response.ok) return;
      const page = await response.json();
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      if (after === "" && page.lines.length > 0) pre.textContent = "";
      for (const line of page.lines) pre.append(document.createTextNode(line.message + "\n"));
      if (page.next) pre.dataset.next = page.next;
      if (page.lines.length > 0) {
        const missing = pre.parentElement && pre.parentElement.querySelector(".log-missing");
        if (missing) missing.remove();
      }
      if (atBottom) pre.scrollTop = pre.scrollHeight;
    } catch {
      // Try again at the next tick.
    }
  }

  for (const checkbox of document.querySelectorAll("input.follow")) {
    const pre = document.getElementById(checkbox.dataset.target);
    if (!pre) continue;
    setInterval(() => void follow(pre, checkbox), 1000);
  }
})();
