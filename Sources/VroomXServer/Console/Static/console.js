// VroomX dispatch console: live updates, keys, confirmations, local times.
// No inline script anywhere (the page's CSP forbids it); everything here
// hooks onto data attributes the server renders.
"use strict";

(function () {
  const body = document.body;

  // A notice says once what the dispatcher just did: reloading the page does not say it again.
  const arrival = performance.getEntriesByType("navigation")[0];
  if (arrival && arrival.type === "reload") {
    document.querySelectorAll(".notice[role=status]").forEach((notice) => notice.remove());
  }

  // Times arrive in UTC; show them in the reader's own zone.
  function localTimes(root) {
    const format = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
    root.querySelectorAll("time[datetime]").forEach((element) => {
      const date = new Date(element.getAttribute("datetime"));
      if (!isNaN(date)) { element.textContent = format.format(date); element.title = date.toString(); }
    });
  }

  // On a phone the sections scroll in one row: the current one is brought into view.
  const section = document.querySelector(".main-nav a[aria-current=page]");
  const nav = section && section.parentElement;
  if (nav && nav.scrollWidth > nav.clientWidth) {
    const shown = section.getBoundingClientRect(), row = nav.getBoundingClientRect();
    nav.scrollLeft += shown.left - row.left - (nav.clientWidth - shown.width) / 2;
  }

  // Rows open their page on click or Enter; j/k move between them.
  function rows() { return Array.from(document.querySelectorAll("tr[data-href]")); }
  document.addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-href]");
    if (row && !event.target.closest("a, button, input, select, form")) { window.location = row.dataset.href; }
  });

  // Forms that change something the driver sees ask first.
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) { event.preventDefault(); }
  });

  // A CSV file chosen for import is read into the text box and sent with the form.
  document.querySelectorAll("[data-csv-file]").forEach((input) => {
    input.addEventListener("change", () => {
      const file = input.files && input.files[0];
      if (!file) { return; }
      file.text().then((text) => { document.getElementById("csv").value = text; });
    });
  });

  // Photos are sent one by one as the request body (no form encoding, so a
  // large file streams); the server answers errors in the API's JSON shape.
  document.querySelectorAll("form[data-photo-upload]").forEach((form) => {
    const input = form.querySelector("input[type=file]");
    // A one-click upload (a receipt beside its expense): choosing the file sends it.
    if (input.hasAttribute("data-submit-on-choose")) input.addEventListener("change", () => form.requestSubmit());
    const status = form.querySelector("[data-upload-status]");
    const problem = form.querySelector("[data-upload-error]");
    const button = form.querySelector("button[type=submit]");
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const files = Array.from(input.files || []);
      if (!files.length) { input.focus(); return; }
      problem.hidden = true;
      if (button) button.disabled = true;
      let sent = 0;
      for (const file of files) {
        status.textContent = "Uploading " + (sent + 1) + " of " + files.length + "…";
        let answer;
        try {
          answer = await fetch(form.getAttribute("action"), {
            method: "POST", body: file, credentials: "same-origin",
            headers: { "Content-Type": file.type || "application/octet-stream", "X-CSRF-Token": form.elements["_csrf"].value },
          });
        } catch (error) {
          answer = null;
        }
        if (!answer || !answer.ok) {
          let message = "The upload did not reach the server; check the connection and try again.";
          if (answer) {
            try { message = (await answer.json()).error.message; } catch (error) { message = "The server refused " + file.name + "."; }
          }
          problem.textContent = file.name + ": " + message + (sent ? " (" + sent + " uploaded before it.)" : "");
          problem.hidden = false;
          status.textContent = "";
          if (button) button.disabled = false;
          return;
        }
        sent += 1;
      }
      status.textContent = sent + (sent === 1 ? " photo" : " photos") + " uploaded.";
      window.location.reload();
    });
  });

  // A button that cannot work yet (a new sign-in code within the minute) says when it will,
  // and a sentence that says when counts down with it.
  document.querySelectorAll("[data-wait-seconds]").forEach((element) => {
    const label = element.textContent;
    const until = Date.now() + Number(element.dataset.waitSeconds) * 1000;
    const isButton = element.tagName === "BUTTON";
    function tick() {
      const left = Math.ceil((until - Date.now()) / 1000);
      if (isButton) {
        element.disabled = left > 0;
        element.textContent = left > 0 ? `${label} (in ${left} s)` : label;
      } else {
        element.textContent = left > 0 ? `in ${left} s` : "now";
      }
      if (left > 0) { setTimeout(tick, 1000); }
    }
    tick();
  });

  document.querySelectorAll("[data-print]").forEach((button) => button.addEventListener("click", () => window.print()));

  // Naming a customer on the order form fills in their payment terms, when the order has none yet.
  const customerField = document.getElementById("customer");
  const termsField = document.getElementById("payment_terms");
  if (customerField && termsField) {
    customerField.addEventListener("change", () => {
      const chosen = Array.from(document.querySelectorAll("#customer-names option"))
        .find((option) => option.value.toLowerCase() === customerField.value.trim().toLowerCase());
      if (chosen && chosen.dataset.terms && !termsField.value.trim()) termsField.value = chosen.dataset.terms;
    });
  }

  // A link to hand on: a click selects all of it; Copy puts it on the clipboard and says so.
  document.querySelectorAll("[data-select-all]").forEach((field) => field.addEventListener("focus", () => field.select()));
  document.querySelectorAll("[data-copy]").forEach((button) => button.addEventListener("click", async () => {
    const field = document.querySelector(button.dataset.copy);
    if (!field) return;
    try {
      await navigator.clipboard.writeText(field.value);
    } catch (error) {
      field.select();
      document.execCommand("copy");
    }
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 2000);
  }));

  // Keys, on pages that list things (never while typing in a field).
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    const typing = event.target.closest("input, textarea, select, [contenteditable]");
    if (typing) {
      if (event.key === "Escape") { event.target.blur(); }
      return;
    }
    const list = rows();
    const current = list.indexOf(document.activeElement);
    if (event.key === "/") {
      const search = document.querySelector("[data-key='/']");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if ((event.key === "j" || event.key === "ArrowDown") && list.length) {
      event.preventDefault();
      list[Math.min(current + 1, list.length - 1)].focus();
    } else if ((event.key === "k" || event.key === "ArrowUp") && list.length) {
      event.preventDefault();
      list[Math.max(current - 1, 0)].focus();
    } else if (event.key === "Enter" && current >= 0) {
      window.location = list[current].dataset.href;
    } else if (event.key === "n") {
      const link = document.querySelector("[data-key='n']");
      if (link) { window.location = link.getAttribute("href"); }
    } else if (/^[1-5]$/.test(event.key)) {
      const tab = document.querySelectorAll(".tabs a")[Number(event.key) - 1];
      if (tab) { window.location = tab.getAttribute("href"); }
    }
  });

  // Live: when the carrier's data changes, fetch this page again and swap
  // the parts marked data-live (forms stay as they are, with what is typed).
  const status = document.getElementById("live-status");
  function say(text) { if (status) { status.textContent = text; status.hidden = !text; } }
  let pending = null;
  function refresh() {
    pending = null;
    fetch(window.location.href, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
      .then((response) => {
        if (response.redirected || !response.ok) { return null; }
        return response.text();
      })
      .then((html) => {
        if (!html) { return; }
        const fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-live]").forEach((region) => {
          const replacement = fresh.getElementById(region.id);
          if (!replacement || replacement.innerHTML === region.innerHTML) { return; }
          // Not while the dispatcher is typing or choosing in it: the next change brings it up to date.
          const active = document.activeElement;
          if (active && region.contains(active) && active.matches("input, select, textarea")) { return; }
          const focusedHref = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.href : null;
          region.replaceWith(replacement);
          replacement.classList.add("flash");
          localTimes(replacement);
          latestLines();
          if (focusedHref) {
            const again = replacement.querySelector(`tr[data-href="${CSS.escape(focusedHref)}"]`);
            if (again) { again.focus(); }
          }
        });
      })
      .catch(() => {});
  }
  // A conversation opens at its newest lines.
  function latestLines() { document.querySelectorAll(".conversation .lines").forEach((lines) => { lines.scrollTop = lines.scrollHeight; }); }
  latestLines();

  // Live updates. A cut stream the browser retries by itself; a refused one (a full server answers 429
  // or 503) it gives up on, so the page tries again later, waiting longer each time, and catches up on
  // what it missed meanwhile.
  let failures = 0;
  function listen() {
    const source = new EventSource(body.dataset.liveUrl);
    // (Re)connected: what came while the stream was down is looked at once.
    source.addEventListener("open", () => { failures = 0; say(""); checkMessages(); });
    source.addEventListener("error", () => {
      if (source.readyState !== EventSource.CLOSED) { say("Reconnecting live updates…"); return; }
      source.close();
      const seconds = Math.round(Math.min(60, 3 * Math.pow(2, failures)) * (0.5 + Math.random() / 2));
      failures += 1;
      say(`Live updates paused; trying again in ${seconds} s…`);
      setTimeout(() => { listen(); refresh(); }, seconds * 1000);
    });
    source.addEventListener("signed-out", () => { source.close(); window.location = "/sign-in"; });
    source.addEventListener("change", (event) => {
      let entities = [];
      try { entities = JSON.parse(event.data).entities || []; } catch (error) { entities = ["all"]; }
      if (entities.includes("message") || entities.includes("all")) { checkMessages(); }
      // An order that became late or at risk is announced like a message (at most every 5 s in a burst of changes).
      else if (entities.includes("order") && !checkingSoon) { checkingSoon = setTimeout(() => { checkingSoon = null; checkMessages(); }, 5000); }
      // Several changes in a burst become one refresh (of a page that shows live parts).
      if (live && !pending) { pending = setTimeout(refresh, 250); }
    });
  }
  const live = document.querySelector("[data-live]") !== null;

  // Drivers' messages: the unread count beside Messages on every page, and a
  // new one announced once in this browser (wherever the dispatcher is, also
  // one that came while no page was open) with a link to it.
  const badge = document.getElementById("unread-messages");
  const toast = document.getElementById("message-toast");
  let checkingSoon = null;
  function remembered(key) { try { return window.localStorage.getItem(key); } catch (error) { return null; } }
  function remember(key, value) { try { window.localStorage.setItem(key, value); } catch (error) { /* private mode */ } }
  function announce(url, text) {
    if (window.location.pathname === url) { return; }
    const link = toast.querySelector("a");
    link.href = url;
    link.textContent = text;
    toast.hidden = false;
    setTimeout(() => { toast.hidden = true; }, 15000);
  }
  // Late and at-risk orders: the alerts after the last one this browser announced, from its first page on (the board marks
  // older ones); the newest is said, with how many more came.
  function announceAlert(answer) {
    const alert = answer.alert;
    const since = Number(remembered("vroomx-alerts-since"));
    if (!since) { remember("vroomx-alerts-since", String(answer.now)); return false; }
    if (!alert || !toast || alert.at <= since) { return false; }
    remember("vroomx-alerts-since", String(alert.at));
    announce(alert.url, alert.text);
    return true;
  }
  function checkMessages() {
    if (!badge) { return; }
    const since = Number(remembered("vroomx-alerts-since")) || 0;
    fetch(`/messages/unread?alerts_since=${since}`, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then((response) => (response.ok && !response.redirected ? response.json() : null))
      .then((answer) => {
        if (!answer) { return; }
        badge.textContent = answer.unread > 0 ? String(answer.unread) : "";
        badge.hidden = answer.unread === 0;
        badge.setAttribute("aria-label", `${answer.unread} unread`);
        const latest = answer.latest;
        if (latest && toast && remembered("vroomx-announced") !== latest.key) {
          remember("vroomx-announced", latest.key);
          announce(latest.url, `New message from ${latest.driver}: ${latest.text}`);
          return;  // an alert waits for the next look
        }
        announceAlert(answer);
      })
      .catch(() => {});
  }
  if (body.dataset.liveUrl) { checkMessages(); }
  if (body.dataset.liveUrl && window.EventSource) { listen(); }

  // Pages whose facts do not all come through the feed (positions) look again on a timer.
  const polled = document.querySelector("[data-poll]");
  if (polled) { setInterval(refresh, Math.max(10, Number(polled.dataset.poll) || 30) * 1000); }

  // The order form's vehicles: "Add a vehicle" shows the next empty row, "Remove" empties one and hides it,
  // the total follows the prices, and a VIN typed in full fills in the year and make it encodes.
  const vehicles = document.querySelector("[data-vehicles]");
  if (vehicles) {
    const rowsOf = () => Array.from(vehicles.querySelectorAll("[data-vehicle-row]"));
    const add = vehicles.querySelector("[data-add-vehicle]");
    const total = vehicles.querySelector("[data-vehicles-total]");
    const money = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
    function sum() {
      let cents = 0, unread = 0;
      vehicles.querySelectorAll("[data-vehicle-price]").forEach((input) => {
        if (!input.value.trim()) { return; }
        const value = Number(input.value.replace(/[$,\s]/g, ""));
        if (isFinite(value) && value >= 0) { cents += Math.round(value * 100); } else { unread += 1; }
      });
      total.textContent = money.format(cents / 100) + (unread ? " without a price that is not an amount" : "");
    }
    function showAdd() { add.hidden = !rowsOf().some((row) => row.hidden); }
    add.addEventListener("click", () => {
      const next = rowsOf().find((row) => row.hidden);
      if (next) { next.hidden = false; next.querySelector("[data-vin]").focus(); }
      showAdd();
    });
    vehicles.addEventListener("click", (event) => {
      const remove = event.target.closest("[data-remove-vehicle]");
      if (!remove) { return; }
      const row = remove.closest("[data-vehicle-row]");
      row.querySelectorAll("input:not([type=hidden])").forEach((input) => { input.value = ""; });
      row.querySelectorAll("select").forEach((select) => { select.selectedIndex = 0; });
      if (rowsOf().filter((other) => !other.hidden).length > 1) { row.hidden = true; }
      sum();
      showAdd();
    });
    vehicles.addEventListener("input", (event) => {
      if (event.target.matches("[data-vehicle-price]")) { sum(); }
      if (!event.target.matches("[data-vin]")) { return; }
      const input = event.target, row = input.closest("[data-vehicle-row]"), note = row.querySelector("[data-vin-note]");
      const vin = input.value.trim().toUpperCase();
      note.textContent = "";
      if (vin.length !== 17) { return; }
      fetch("/vin/" + encodeURIComponent(vin), { headers: { "Accept": "application/json" }, credentials: "same-origin" })
        .then((answer) => answer.ok ? answer.json() : null)
        .then((decoded) => {
          if (!decoded || input.value.trim().toUpperCase() !== vin) { return; }
          const year = row.querySelector("[data-vin-year]"), make = row.querySelector("[data-vin-make]");
          if (decoded.model_year && !year.value) { year.value = decoded.model_year; }
          if (decoded.make && !make.value) { make.value = decoded.make; }
          note.textContent = decoded.problems && decoded.problems.length ? decoded.problems.join(" ")
            : "From the VIN: " + [decoded.model_year, decoded.make || "maker not listed", decoded.region].filter(Boolean).join(", ") + ".";
        })
        .catch(() => {});
    });
    showAdd();
  }

  localTimes(document);
  // A form sent back with problems: the first one marked has the focus.
  const firstProblem = document.querySelector("main [aria-invalid=true]");
  if (firstProblem) { firstProblem.focus(); }
})();
