// The tracking page refreshes itself: every few seconds it reads itself
// again and puts the new progress in place, so a customer sees "Picked up"
// without reloading. A link revoked meanwhile shows that it ended.
(() => {
  "use strict";
  const format = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" });
  function localTimes(root) {
    root.querySelectorAll("time[datetime]").forEach((element) => {
      const date = new Date(element.getAttribute("datetime"));
      if (!isNaN(date)) { element.textContent = format.format(date); element.title = date.toString(); }
    });
  }
  const main = document.getElementById("tracking");
  if (!main) return;
  localTimes(main);
  const seconds = Math.max(5, parseInt(main.dataset.refresh || "10", 10));
  async function refresh() {
    try {
      const response = await fetch(location.pathname, { cache: "no-store", credentials: "omit" });
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("tracking");
      if (fresh) {
        main.innerHTML = fresh.innerHTML;
        localTimes(main);
        if (response.status === 404) return;  // the link ended: nothing more to follow
      }
    } catch (error) {
      // Offline for a moment: try again at the next turn.
    }
    setTimeout(refresh, seconds * 1000);
  }
  setTimeout(refresh, seconds * 1000);
})();
