// Reader pages: "cite" buttons copy the citation of a value in one click (text), the panel beside it in the
// format chosen. Without JavaScript (or clipboard permission) the citation stays readable in the panel's box.
const COPIED_FOR_MS = 2000;
// The section's "other formats" panel takes the value just cited: its text, Markdown and BibTeX.
function fillFormats(panel, button) {
  const formats = { text: button.dataset.cite, markdown: button.dataset.markdown, bibtex: button.dataset.bibtex };
  for (const copy of panel.querySelectorAll("button.copy-cite")) copy.dataset.cite = formats[copy.dataset.format];
  panel.querySelector(".cite-target strong").textContent = button.dataset.name;
  panel.querySelector("textarea").setAttribute("aria-label", `Citation of ${button.dataset.name}`);
}
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy-cite");
  if (!button) return;
  const text = button.dataset.cite;
  const panel = button.closest("details.cite-formats") ?? button.closest("section, .sheet-head")?.querySelector("details.cite-formats");
  const box = panel?.querySelector("textarea");
  if (box) box.value = text;
  if (panel && button.dataset.markdown) fillFormats(panel, button);
  try {
    await navigator.clipboard.writeText(text);
    button.dataset.copied = "yes";
    button.dataset.label ??= button.textContent;
    button.textContent = button.classList.contains("cite-one-click") ? "copied" : "Copied " + button.dataset.format;
    // back to its own label after a moment, ready for the next copy
    clearTimeout(button.resetTimer);
    button.resetTimer = setTimeout(() => {
      button.textContent = button.dataset.label;
      delete button.dataset.copied;
    }, COPIED_FOR_MS);
  } catch (error) {
    if (panel) panel.open = true;
    if (box) { box.focus(); box.select(); }
    button.textContent = "select and copy from the box";
  }
});

// The calculator: the weights list offers the chosen model's checkpoints only (the form is sent by its button).
document.addEventListener("change", (event) => {
  const form = event.target.closest("form.fits-form");
  if (!form || event.target.name !== "model") return;
  const group = form.querySelector("select[name=weights] optgroup:last-of-type");
  const all = form.querySelector("#fits-checkpoints");
  if (!group || !all) return;
  const chosen = form.weights.value;
  group.replaceChildren(...[...all.content.children].filter((o) => o.dataset.model === event.target.value)
    .map((o) => o.cloneNode(true)));
  if (chosen.startsWith("checkpoint:") && !group.querySelector(`option[value="${CSS.escape(chosen)}"]`)) form.weights.value = "";
});

// A filter's blank choice means "no filter": say so ("All") instead of showing an empty box.
document.addEventListener("DOMContentLoaded", () => {
  for (const option of document.querySelectorAll("select option[value='']")) {
    if (!option.textContent.trim()) option.textContent = "All";
  }
});

// Controls other packages draw without an accessible name: Datasette's filter row and phone sort list, the
// editor CodeMirror puts over the SQL box (CodeMirror 5 on Datasette 0.65, 6 on 1.0), a table frame that scrolls sideways (named and reachable by keyboard).
const CONTROL_NAMES = {
  "select[name^=_filter_column]": "Column to filter", "select[name^=_filter_op]": "How to compare",
  "input.filter-value": "Value to compare with", "select#sort_by": "Sort by column",
  ".CodeMirror textarea": "SQL query", "textarea#sql-editor": "SQL query", ".cm-content": "SQL query",
};
function nameDatasetteControls() {
  for (const [selector, name] of Object.entries(CONTROL_NAMES)) {
    for (const control of document.querySelectorAll(selector)) {
      if (!control.getAttribute("aria-label")) control.setAttribute("aria-label", name);
    }
  }
  // a table wider than its frame: reachable by keyboard, and a cue above it that more columns are to the right
  for (const frame of document.querySelectorAll(".table-wrapper:not([tabindex]), .table-frame:not([tabindex])")) {
    if (frame.scrollWidth > frame.clientWidth + 1 && !frame.closest("[hidden]")) {
      frame.tabIndex = 0;
      frame.setAttribute("role", "region");
      frame.setAttribute("aria-label", "Table, scrolls sideways");
      frame.before(Object.assign(document.createElement("p"), {
        className: "scroll-cue", textContent: "Scroll the table sideways for more columns →" }));
    }
  }
}

nameDatasetteControls();
new MutationObserver(nameDatasetteControls).observe(document.body, { childList: true, subtree: true });

// Dashboards: each chart is an SVG drawn on the server (plugins/dashboard_charts.py), asked for at the width
// of its box and put in the page, so its links and titles work as the page's own; one request a chart, and
// one more after each "busy" answer (503), at most four.
async function drawChart(box, tries = 5) {
  const url = new URL(box.dataset.chartPicture, location.href);
  url.searchParams.set("width", Math.max(1, Math.floor(box.clientWidth)));
  const note = (text, link) => {
    const p = Object.assign(document.createElement("p"), { className: "chart-note", textContent: text });
    if (link) p.append(" ", Object.assign(document.createElement("a"), { href: url, textContent: link }));
    return p;
  };
  let answer;
  try {
    answer = await fetch(url);
  } catch (error) {
    box.replaceChildren(note("The chart could not be fetched: the connection failed."));
    return;
  }
  // the server draws one chart at a time and says when to ask again
  if (answer.status === 503 && tries > 1) {
    await new Promise((done) => setTimeout(done, (Number(answer.headers.get("Retry-After")) || 1) * 1000));
    return drawChart(box, tries - 1);
  }
  if (!answer.ok) {
    box.replaceChildren(note(`The chart could not be drawn (HTTP ${answer.status}).`, "Why"));
    return;
  }
  box.innerHTML = await answer.text();
  if (answer.headers.get("X-Rows-Truncated")) box.append(note("Drawn from the first rows only: the query returned more than a page."));
}
// Three asked at a time, in the page's order: the server draws one at a time, and a page asking for all its
// charts at once would wait for itself past the server's wait (a 503 to ask again).
const chartsToDraw = [...document.querySelectorAll("[data-chart-picture]")];
for (let i = 0; i < 3; i++) {
  (async () => { while (chartsToDraw.length) await drawChart(chartsToDraw.shift()); })();
}

// The compare picker: the filter box hides the accelerators whose name, vendor or slug do not hold every word
// typed (case and accents aside), and empty vendor groups; the count says how many are picked.
const folded = (text) => text.normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
function filterPicker(form) {
  const words = folded(form.querySelector(".compare-filter").value).split(/\s+/).filter(Boolean);
  for (const fieldset of form.querySelectorAll("fieldset")) {
    let shown = 0;
    for (const label of fieldset.querySelectorAll("label[data-filter]")) {
      const keep = words.every((w) => folded(label.dataset.filter).includes(w));
      label.hidden = !keep;
      shown += keep;
    }
    fieldset.hidden = shown === 0;
  }
  const picked = form.querySelectorAll("input[name=ids]:checked").length;
  form.querySelector(".compare-pick-count").textContent = `${picked} picked (2 to 8)`;
}
document.addEventListener("input", (event) => {
  const form = event.target.closest("form.compare-pick");
  if (form) filterPicker(form);
});
document.addEventListener("change", (event) => {
  const form = event.target.closest("form.compare-pick");
  if (form) filterPicker(form);
});
document.addEventListener("DOMContentLoaded", () => {
  const form = document.querySelector("form.compare-pick");
  if (form) filterPicker(form);
});

// Charts of a table or query (datasette-vega): its 944 KB library loads when a reader asks for a chart, or at
// once when the URL already holds one (`#g.mark=...`). The library starts on DOMContentLoaded: loaded later, it
// is sent that event again (the page's other listeners for it only add what is missing).
const chartLibrary = document.querySelector("meta[name=chart-library]");
const chartPlace = document.querySelector("table.rows-and-columns");
let parsed = false;
document.addEventListener("DOMContentLoaded", () => { parsed = true; });
function loadCharts(open) {
  const [script, ...styles] = chartLibrary.content.split(" ");
  for (const href of styles) document.head.append(Object.assign(document.createElement("link"), { rel: "stylesheet", href }));
  const tag = Object.assign(document.createElement("script"), { src: script });
  tag.addEventListener("load", () => {
    if (parsed) document.dispatchEvent(new Event("DOMContentLoaded"));
    // asked for by the button: its options open at once, not behind a second button
    if (open) document.querySelector(".datasette-vega-inactive button")?.click();
  });
  document.head.append(tag);
}
if (chartLibrary && chartPlace && document.querySelector(".export-links a[href*=json]")) {
  if (location.hash.includes("g.mark=")) loadCharts(false);
  else {
    const button = Object.assign(document.createElement("button"), {
      type: "button", className: "chart-these-rows", textContent: "Chart these rows" });
    const place = document.createElement("span");
    place.append(" · ", button);
    button.addEventListener("click", () => { place.remove(); loadCharts(true); });
    // in the line of export links ("This data as json, CSV"): no extra line before the rows
    const links = document.querySelector(".export-links");
    if (links) links.append(place);
    else chartPlace.before(place);
  }
}
