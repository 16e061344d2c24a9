"use strict";
// fieldlog's live page: new milestones on top without a reload, the status line, older milestones
// loaded as one scrolls. The page keeps its scroll position and view throughout.
(() => {
  const cards = document.querySelector("main.cards");
  const status = document.getElementById("status");
  const walk = document.body.dataset.walk || "";
  const seq = document.body.dataset.seq || "0";

  const cardFrom = (html) => {
    const template = document.createElement("template");
    template.innerHTML = html.trim();
    return template.content.firstElementChild;
  };
  const cardOf = (index) => cards.querySelector(`[data-milestone="${index}"]`);

  // Newest first: a card goes before the first card of a lower milestone. One older than every card
  // loaded is left to paging, unless there is nothing more to page in.
  const place = (index, html) => {
    const card = cardFrom(html);
    const existing = cardOf(index);
    if (existing) { existing.replaceWith(card); return; }
    for (const other of cards.children) {
      if (Number(other.dataset.milestone) < index) { other.before(card); return; }
    }
    if (!document.getElementById("older")) cards.append(card);
  };

  // The track comes from the page itself, fetched again once a milestone is in.
  let refreshing = false;
  const refreshTrack = () => {
    if (refreshing) return;
    refreshing = true;
    fetch("/", { cache: "no-store" })
      .then((response) => response.text())
      .then((text) => {
        const fresh = new DOMParser().parseFromString(text, "text/html").querySelector("svg.track");
        const shown = document.querySelector("svg.track");
        if (fresh && shown) shown.replaceWith(document.importNode(fresh, true));
      })
      .catch(() => {})
      .finally(() => { refreshing = false; });
  };

  // The event stream, opened again after any error or refusal (EventSource gives up on a non-200 answer) with
  // a backoff of 1 s doubling to 30 s, jittered so that pages refused together do not come back together;
  // "since" is the last card seen, so the server sends what the page missed meanwhile.
  let last = walk + "/" + seq;
  let line = status.textContent;
  let delay = 1000;
  const connect = () => {
    const events = new EventSource("/events?since=" + encodeURIComponent(last));
    for (const kind of ["milestone", "photo", "star"]) {
      events.addEventListener(kind, (event) => {
        const data = JSON.parse(event.data);
        if (event.lastEventId) last = event.lastEventId;
        // A milestone and its photo journaled within one look arrive as one "photo" event.
        const fresh = !cardOf(data.milestone);
        place(data.milestone, data.html);
        if (kind !== "photo" || fresh) refreshTrack();
      });
    }
    events.addEventListener("status", (event) => {
      const data = JSON.parse(event.data);
      delay = 1000;
      line = data.line;
      status.textContent = line;
      status.classList.remove("stale");
      const summary = document.querySelector(".summary");
      if (data.summary && summary) summary.outerHTML = data.summary;
    });
    events.addEventListener("walk", () => location.reload());
    events.addEventListener("error", () => {
      events.close();
      status.textContent = line + " · reconnecting…";
      status.classList.add("stale");
      setTimeout(connect, delay / 2 + Math.random() * delay / 2);
      delay = Math.min(delay * 2, 30000);
    });
  };
  connect();

  // Paging: the next page's cards are appended when its link comes near the screen.
  let loading = false;
  const pageIn = () => {
    const link = document.getElementById("older");
    if (!link || loading) return;
    loading = true;
    fetch(link.getAttribute("href"), { cache: "no-store" })
      .then((response) => response.text())
      .then((text) => {
        const page = new DOMParser().parseFromString(text, "text/html");
        for (const card of page.querySelectorAll("main.cards > [data-milestone]")) {
          if (!cardOf(card.dataset.milestone)) cards.append(document.importNode(card, true));
        }
        const next = page.getElementById("older");
        if (next) link.setAttribute("href", next.getAttribute("href"));
        else link.parentElement.remove();
        loading = false;
        if (next && link.getBoundingClientRect().top < innerHeight + 800) pageIn();
      })
      .catch(() => { loading = false; });
  };
  const link = document.getElementById("older");
  if (link) {
    link.addEventListener("click", (event) => { event.preventDefault(); pageIn(); });
    if ("IntersectionObserver" in window) {
      new IntersectionObserver((entries) => {
        if (entries.some((entry) => entry.isIntersecting)) pageIn();
      }, { rootMargin: "800px" }).observe(link);
    }
  }
})();
