// Lore web UI: progressive enhancement only; every page works without it.
(function () {
  "use strict";
  const csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  // Keyboard: "/" focuses search, "n" new memory, "e" edit (elements with data-shortcut).
  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target.closest && target.closest("input, textarea, select, [contenteditable]");
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && typing) {
      const form = target.closest("form[data-submit-shortcut]");
      if (form) { event.preventDefault(); form.requestSubmit(); }
      return;
    }
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    const el = document.querySelector('[data-shortcut="' + CSS.escape(event.key) + '"]');
    if (!el) return;
    event.preventDefault();
    if (el.tagName === "INPUT") el.focus(); else el.click();
  });

  // "Select all" checkbox of the memories table.
  document.querySelectorAll("[data-select-all]").forEach(function (box) {
    box.addEventListener("change", function () {
      box.closest("table").querySelectorAll('tbody input[type="checkbox"]').forEach(function (c) { c.checked = box.checked; });
    });
  });

  // Live Markdown preview in the editor (rendered by the server: same escaping as the memory page).
  const source = document.querySelector("[data-preview-source]");
  const preview = document.querySelector("[data-preview-target]");
  if (source && preview) {
    let timer = null, seq = 0;
    const render = function () {
      const mine = ++seq;
      fetch("/api/preview", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ body: source.value || " " })
      }).then(function (r) { return r.ok ? r.json() : null; }).then(function (data) {
        if (data && mine === seq) preview.innerHTML = data.html;
      }).catch(function () {});
    };
    source.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(render, 250); });
    render();
  }

  // Index dashboard: live progress of the running job (server-sent events), reload when it ends.
  const job = document.querySelector("#job[data-events]");
  if (job && window.EventSource) {
    const events = new EventSource(job.dataset.events);
    events.addEventListener("job", function (message) {
      const data = JSON.parse(message.data);
      const state = job.querySelector("[data-job-state]");
      if (state) state.textContent = data.state;
      data.phases.forEach(function (p) {
        const row = job.querySelector('[data-phase="' + CSS.escape(p.name) + '"]');
        if (!row) return;
        const bar = row.querySelector("progress");
        bar.max = p.total || 1;
        bar.value = p.total ? p.done : (p.state === "done" ? 1 : 0);
        row.querySelector("[data-count]").textContent = p.done + (p.total === null ? "" : " / " + p.total) + " · " + p.state;
      });
      if (data.state === "done" || data.state === "failed") {
        events.close();
        setTimeout(function () { window.location.reload(); }, 600);
      }
    });
    events.onerror = function () { events.close(); setTimeout(function () { window.location.reload(); }, 2000); };
  }
})();
