// ccmemory viewer: plain JavaScript, no build step, nothing loaded from the network.
// The token comes from the URL fragment (#token=...), is kept in sessionStorage, and is sent
// as a Bearer header on every API call (the event stream takes it as ?token=).
"use strict";

const $ = (selector) => document.querySelector(selector);
const state = {
  token: null, project: null, projects: [], choices: {}, cursor: null, searching: false,
  session: null, selected: null, latestSeq: 0, sessionsOffset: 0, tab: "memories", events: null,
};

function readFragment() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get("token")) sessionStorage.setItem("ccmemory-token", params.get("token"));
  if (params.get("project")) sessionStorage.setItem("ccmemory-project", params.get("project"));
  if (location.hash) history.replaceState(null, "", location.pathname);
  state.token = sessionStorage.getItem("ccmemory-token");
}

class ApiError extends Error {}

async function api(path, options = {}) {
  const init = { method: options.method || "GET", headers: { Authorization: `Bearer ${state.token}` } };
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(`/api${path}`, init);
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new ApiError(data.error || `HTTP ${response.status}`);
  return data;
}

const projectPath = (rest = "") => `/projects/${state.project}${rest}`;

function notify(message, kind = "error") {
  const box = $("#notice");
  box.textContent = message;
  box.className = `notice ${kind}`;
  box.hidden = false;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => { box.hidden = true; }, kind === "error" ? 8000 : 3000);
}

async function guarded(work) {
  try { return await work(); } catch (error) { notify(error.message); return undefined; }
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function bytes(count) {
  const units = ["B", "KB", "MB", "GB"];
  let value = count, unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit += 1; }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

const day = (stamp) => (stamp || "").replace("T", " ").slice(0, 16);

// A small, safe Markdown subset: text is escaped first, then fences, headings, lists, emphasis, code.
function markdown(text) {
  const escape = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const inline = (s) => escape(s)
    .replace(/`([^`]+)`/g, "<code>$1</code>")
    .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|\W)\*([^*\s][^*]*)\*(?=\W|$)/g, "$1<em>$2</em>");
  const out = [];
  let list = false, fence = null;
  for (const line of text.split("\n")) {
    if (fence !== null) {
      if (line.startsWith("```")) { out.push(`<pre><code>${escape(fence.join("\n"))}</code></pre>`); fence = null; }
      else fence.push(line);
      continue;
    }
    if (line.startsWith("```")) { if (list) { out.push("</ul>"); list = false; } fence = []; continue; }
    const item = line.match(/^\s*[-*] (.*)$/);
    if (item) { if (!list) { out.push("<ul>"); list = true; } out.push(`<li>${inline(item[1])}</li>`); continue; }
    if (list) { out.push("</ul>"); list = false; }
    const heading = line.match(/^(#{1,6}) (.*)$/);
    if (heading) out.push(`<h${Math.min(heading[1].length + 3, 6)}>${inline(heading[2])}</h${Math.min(heading[1].length + 3, 6)}>`);
    else if (line.trim()) out.push(`<p>${inline(line)}</p>`);
  }
  if (fence !== null) out.push(`<pre><code>${escape(fence.join("\n"))}</code></pre>`);
  if (list) out.push("</ul>");
  return out.join("");
}

function rich(text) {
  const box = el("div", { class: "content" });
  box.innerHTML = markdown(text);  // markdown() escapes every character of the text first
  return box;
}

// ------------------------------------------------------------------ projects and header

async function loadProjects() {
  const data = await api("/projects");
  state.projects = data.projects;
  state.choices = data;
  const select = $("#project");
  select.replaceChildren(...data.projects.map((p) =>
    el("option", { value: p.id }, `${p.name} (${p.memories})`)));
  for (const [id, values] of [["#f-sector", data.sectors], ["#f-category", data.categories]]) {
    const box = $(id);
    if (box.options.length === 1) box.append(...values.map((v) => el("option", { value: v }, v)));
  }
  const wanted = Number(sessionStorage.getItem("ccmemory-project"));
  const known = data.projects.find((p) => p.id === (state.project || wanted));
  state.project = known ? known.id : (data.projects[0] || {}).id || null;
  if (state.project) select.value = state.project;
  showProjectPath();
}

function showProjectPath() {
  const project = state.projects.find((p) => p.id === state.project);
  const path = $("#project-path");
  path.textContent = project ? project.path : "";
  path.title = project ? [project.identity || "no identity", ...project.aliases.map((a) => a.path)].join("\n") : "";
}

// Every project: identity, the paths where it was seen (a gone one marked), counts, last activity.
function renderProjects() {
  const table = (rows) => el("table", { class: "facts" }, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  $("#projects-list").replaceChildren(...state.projects.map((p) => el("div", { class: "project-card", "data-project": p.id },
    el("h3", {}, `${p.name} `, el("span", { class: "muted" }, `#${p.id}`)),
    table([["identity", p.identity || "–"], ["remote", p.remote || "–"],
      ["counts", `${p.memories} memories, ${p.sessions} sessions, ${p.documents} documents, ${p.memory_files} memory files`],
      ["last activity", p.last_activity.slice(0, 16).replace("T", " ")],
      ["paths", el("ul", { class: "aliases" }, ...p.aliases.map((a) => el("li", { class: a.exists ? "" : "gone" }, a.path,
        el("span", { class: "muted" }, ` (${[a.kind, a.pinned ? "pinned" : null, a.exists ? null : "no longer exists"]
          .filter(Boolean).join(", ")})`))))]]))));
  if (!state.projects.length) $("#projects-list").append(el("p", { class: "empty" }, "No projects yet."));
}

async function loadBadge() {
  if (!state.project) return;
  const data = await api(projectPath());
  $("#storage-badge").textContent = `${bytes(data.storage.total_bytes)} on disk`;
}

// ------------------------------------------------------------------ memory list and search

function filterQuery() {
  const params = new URLSearchParams();
  for (const [name, id] of [["scope", "#f-scope"], ["sector", "#f-sector"], ["tier", "#f-tier"], ["category", "#f-category"],
    ["superseded", "#f-superseded"], ["deleted", "#f-deleted"]]) {
    if ($(id).value) params.set(name, $(id).value);
  }
  if (state.session) params.set("session", state.session);
  return params;
}

function memoryItem(memory, extra = {}) {
  const marks = [];
  if (memory.is_deleted) marks.push(el("span", { class: "tag deleted" }, "deleted"));
  if (memory.is_superseded) marks.push(el("span", { class: "tag superseded" }, "superseded"));
  if (memory.origin) marks.push(el("span", { class: "tag origin" }, memory.origin));
  const item = el("li", {
    class: `memory${memory.id === state.selected ? " selected" : ""}${extra.fresh ? " new" : ""}`,
    "data-id": memory.id, "data-seq": memory.seq || "",
    onclick: () => selectMemory(memory.id),
  },
  el("div", { class: "meta" },
    el("span", { class: `sector s-${memory.sector}` }, memory.sector),
    el("span", {}, memory.category), el("span", {}, memory.tier),
    extra.score !== undefined ? el("span", { class: `score${extra.weak ? " weak" : ""}` },
      `score ${extra.score.toFixed(2)}${extra.weak ? " · weak match" : ""}`) : null,
    extra.shared ? el("span", { class: "tag shared" }, `shared by ${extra.shared.by} ${day(extra.shared.at)}`) : null,
    ...(extra.stale || []).map((entry) => el("span", { class: "tag superseded", title: `recorded ${day(entry.since)}` },
      `stale: ${entry.file} ${entry.change === "gone" ? "is gone" : "changed since"}`)),
    el("span", { class: "muted" }, day(memory.created_at)), ...marks),
  el("div", { class: "snippet" }, memory.content.length > 240 ? `${memory.content.slice(0, 240)}…` : memory.content));
  return item;
}

function showEmpty(message) {
  $("#empty").hidden = !message;
  $("#empty").textContent = message || "";
}

async function loadMemories({ append = false, freshAfter = null } = {}) {
  if (!state.project) {
    $("#memories").replaceChildren();
    showEmpty("No project has memories yet. Work in a project with Claude Code (the hooks capture every tool "
      + "call), or run `ccmemory add` there; it appears here at once.");
    return;
  }
  const params = filterQuery();
  if (append && state.cursor) params.set("cursor", state.cursor);
  const data = await api(projectPath(`/memories?${params}`));
  state.cursor = data.next_cursor;
  const items = data.memories.map((m) => memoryItem(m, { fresh: freshAfter !== null && m.seq > freshAfter }));
  if (append) $("#memories").append(...items); else $("#memories").replaceChildren(...items);
  $("#more").hidden = !data.next_cursor;
  $("#count").textContent = `${data.total_is_lower_bound ? `${data.total.toLocaleString()}+` : data.total.toLocaleString()} memories`;
  showEmpty(data.total ? "" : (params.toString() === "scope=project&deleted=exclude&superseded=include"
    ? "No memories in this project yet. They appear here as Claude Code works (hooks capture each tool call), "
      + "or add one with “+ New memory”."
    : "No memory matches these filters."));
}

async function runSearch(freshAfter = null) {
  const q = $("#q").value.trim();
  if (!q) { clearSearch(); return; }
  state.searching = true;
  $("#clear-search").hidden = false;
  $("#count").textContent = "Searching…";
  const params = new URLSearchParams({ q, mode: $("#mode").value, limit: "50" });
  params.set("scope", $("#f-scope").value);
  if ($("#f-sector").value) params.set("sector", $("#f-sector").value);
  if ($("#f-superseded").value !== "exclude") params.set("include_superseded", "true");
  if ($("#f-team").value === "exclude") params.set("team", "false");
  const data = await api(projectPath(`/search?${params}`));
  $("#memories").replaceChildren(...data.hits.map((hit) =>
    memoryItem(hit.memory, { score: hit.score, weak: hit.weak, shared: hit.shared, stale: hit.stale, fresh: freshAfter !== null && hit.memory.seq > freshAfter })));
  $("#more").hidden = true;
  $("#count").textContent = `${data.hits.length} result${data.hits.length === 1 ? "" : "s"} (${data.mode_used})`
    + (data.warnings.length ? ` · ${data.warnings.join(" ")}` : "");
  showEmpty(data.hits.length ? "" : `No memory matches “${q}”.`);
}

function clearSearch() {
  state.searching = false;
  $("#q").value = "";
  $("#clear-search").hidden = true;
  return guarded(() => loadMemories());
}

const refreshList = (freshAfter = null) => (state.searching ? runSearch(freshAfter) : loadMemories({ freshAfter }));

// ------------------------------------------------------------------ memory detail and actions

async function selectMemory(id) {
  state.selected = id;
  for (const item of document.querySelectorAll("#memories li")) {
    item.classList.toggle("selected", item.dataset.id === id);
  }
  await guarded(async () => renderDetail(await api(projectPath(`/memories/${id}`))));
}

function action(label, id, handler, kind = "") {
  return el("button", { type: "button", id, class: kind, onclick: () => guarded(handler) }, label);
}

async function afterChange(detail, message) {
  notify(message, "ok");
  if (detail) renderDetail(detail); else { $("#detail").hidden = true; $("#detail").replaceChildren(); state.selected = null; }
  await refreshList();
  await loadBadge();
}

function renderDetail(detail) {
  const m = detail.memory;
  const box = $("#detail");
  box.hidden = false;
  const path = projectPath(`/memories/${m.id}`);
  const rows = [
    ["id", m.id], ["scope", m.origin || m.scope], ["sector", m.sector], ["category", m.category], ["tier", m.tier],
    ["tags", m.tags.join(", ") || "–"], ["files", m.files.join(", ") || "–"],
    ["salience", m.salience.toFixed(3)], ["importance", m.importance.toFixed(2)],
    ["references", m.reference_count], ["source", m.source], ["created", day(m.created_at)],
    ["updated", day(m.updated_at)],
  ];
  if (detail.superseded_by) rows.push(["superseded by", detail.superseded_by]);
  if (detail.supersedes.length) rows.push(["supersedes", detail.supersedes.join(", ")]);
  if (m.is_deleted) rows.push(["deleted", day(m.deleted_at)]);
  const actions = m.is_deleted
    ? [action("Restore", "restore", async () => afterChange(await api(`${path}/restore`, { method: "POST" }), "Restored"))]
    : [
      action("Edit", "edit", () => renderEditor(m)),
      action("Reinforce", "reinforce", async () => afterChange(await api(`${path}/reinforce`, { method: "POST", body: {} }), "Reinforced")),
      action("De-emphasize", "deemphasize", async () => afterChange(await api(`${path}/deemphasize`, { method: "POST", body: {} }), "De-emphasized")),
      action("Supersede…", "supersede", () => renderSupersede(m)),
      action("Delete", "delete", async () => {
        await api(path, { method: "DELETE" });
        await afterChange(null, "Moved to the trash (filter “only deleted” to restore it)");
      }, "danger"),
    ];
  const hard = el("button", { type: "button", id: "hard-delete", class: "danger" }, "Delete permanently");
  hard.addEventListener("click", () => guarded(async () => {
    if (!hard.classList.contains("armed")) {
      hard.classList.add("armed");
      hard.textContent = "Click again: this cannot be undone";
      return;
    }
    await api(`${path}?hard=true`, { method: "DELETE" });
    await afterChange(null, "Deleted permanently");
  }));
  box.replaceChildren(
    el("div", { class: "detail-head" }, el("h2", {}, "Memory"),
      el("button", { type: "button", class: "close", title: "Close", onclick: () => { box.hidden = true; } }, "×")),
    rich(m.content),
    el("div", { class: "actions" }, ...actions, hard),
    el("table", { class: "facts" }, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))),
    detail.session ? el("div", { class: "session-box" }, el("h3", {}, `Session ${detail.session.id.slice(0, 12)}`),
      detail.session.summary ? rich(detail.session.summary) : el("p", { class: "muted" }, "No summary yet.")) : null,
  );
}

function renderEditor(memory) {
  const box = $("#detail");
  const content = el("textarea", { id: "edit-content", rows: 12 });
  content.value = memory.content;
  const tags = el("input", { id: "edit-tags", type: "text", value: memory.tags.join(", "), placeholder: "tags, comma separated" });
  const sector = el("select", { id: "edit-sector" }, ...state.choices.sectors.map((s) =>
    el("option", { value: s, selected: s === memory.sector }, s)));
  const save = async () => {
    const detail = await api(projectPath(`/memories/${memory.id}`), {
      method: "PATCH",
      body: { content: content.value, tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean), sector: sector.value },
    });
    await afterChange(detail, "Saved");
  };
  box.replaceChildren(
    el("h2", {}, "Edit memory"),
    el("label", {}, "Content", content),
    el("label", {}, "Tags", tags),
    el("label", {}, "Sector", sector),
    el("div", { class: "actions" }, action("Save", "save", save, "primary"),
      action("Cancel", "cancel", () => selectMemory(memory.id))),
    el("p", { class: "muted" }, "Secrets in the text are redacted when it is stored, as for every write."),
  );
  content.focus();
}

function renderSupersede(memory) {
  const box = $("#detail");
  const content = el("textarea", { id: "supersede-content", rows: 8, placeholder: "The corrected memory" });
  const other = el("input", { id: "supersede-id", type: "text", placeholder: "…or the id of an existing memory" });
  const go = async () => {
    const body = other.value.trim() ? { new_id: other.value.trim() } : { content: content.value };
    const result = await api(projectPath(`/memories/${memory.id}/supersede`), { method: "POST", body });
    state.selected = result.new.memory.id;
    await afterChange(result.new, "Superseded: the old memory is kept as history and hidden from default search");
  };
  box.replaceChildren(
    el("h2", {}, "Supersede memory"), rich(memory.content),
    el("label", {}, "Replace with new text", content), el("label", {}, "Replace with memory id", other),
    el("div", { class: "actions" }, action("Supersede", "supersede-go", go, "primary"),
      action("Cancel", "cancel", () => selectMemory(memory.id))),
  );
}

function renderNew() {
  const box = $("#detail");
  box.hidden = false;
  const content = el("textarea", { id: "new-content", rows: 10, placeholder: "A decision, a gotcha, a preference…" });
  const category = el("select", { id: "new-category" }, ...state.choices.categories.map((c) => el("option", { value: c }, c)));
  category.value = "general";
  const sector = el("select", { id: "new-sector" }, el("option", { value: "" }, "guess from the text"),
    ...state.choices.sectors.map((s) => el("option", { value: s }, s)));
  const tags = el("input", { id: "new-tags", type: "text", placeholder: "tags, comma separated" });
  const create = async () => {
    const body = { content: content.value, category: category.value,
      tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean) };
    if (sector.value) body.sector = sector.value;
    const detail = await api(projectPath("/memories"), { method: "POST", body });
    state.selected = detail.memory.id;
    await afterChange(detail, "Memory added");
  };
  box.replaceChildren(el("h2", {}, "New memory"), el("label", {}, "Content", content),
    el("label", {}, "Category", category), el("label", {}, "Sector", sector), el("label", {}, "Tags", tags),
    el("div", { class: "actions" }, action("Add", "create", create, "primary"),
      action("Cancel", "cancel", () => { box.hidden = true; })));
  content.focus();
}

// ------------------------------------------------------------------ sessions

async function loadSessions(append = false) {
  if (!state.project) return;
  if (!append) state.sessionsOffset = 0;
  const data = await api(projectPath(`/sessions?offset=${state.sessionsOffset}`));
  const items = data.sessions.map((s) => el("li", { class: "session", "data-id": s.id },
    el("div", { class: "meta" }, el("strong", {}, day(s.started_at)),
      el("span", { class: "muted" }, s.ended_at ? `ended ${day(s.ended_at)}` : "open"),
      el("span", {}, `${s.memories} memories`),
      el("button", { type: "button", onclick: () => showSession(s.id) }, "Memories"),
      el("button", { type: "button", onclick: () => openNode(`session:${s.id}`) }, "Tree")),
    s.summary ? rich(s.summary) : el("p", { class: "muted" }, "No summary yet (written at Stop).")));
  if (append) $("#sessions").append(...items); else $("#sessions").replaceChildren(...items);
  if (!append && !items.length) $("#sessions").append(el("li", { class: "empty" }, "No sessions captured in this project yet."));
  state.sessionsOffset = data.next_offset || state.sessionsOffset;
  $("#more-sessions").hidden = data.next_offset === null;
}

function showSession(id) {
  state.session = id;
  const chip = $("#session-chip");
  chip.hidden = false;
  chip.replaceChildren(`session ${id.slice(0, 12)} `, el("button", { type: "button", title: "Show all sessions",
    onclick: () => { state.session = null; chip.hidden = true; guarded(() => loadMemories()); } }, "×"));
  switchTab("memories");
  clearSearch();
}

// ------------------------------------------------------------------ /memories files

async function loadFiles() {
  if (!state.project) return;
  const data = await api(projectPath("/files"));
  $("#files").replaceChildren(...data.files.map((f) => el("li", { class: "node", "data-path": f.path,
    onclick: () => guarded(() => openFile(f.path)) },
  el("div", { class: "meta" }, el("code", {}, f.path), el("span", { class: "tag" }, f.scope),
    el("span", { class: "muted" }, `${bytes(f.bytes)} · v${f.version} · ${day(f.updated_at)}`)))));
  if (!data.files.length) $("#files").append(el("li", { class: "empty" }, "No memory files yet. Claude writes them with the memory tool; or add one with “+ New file”."));
}

function fileEditor(file) {
  const box = $("#file");
  box.hidden = false;
  const path = el("input", { id: "file-path", type: "text", value: file ? file.path : "/memories/notes.md" });
  const content = el("textarea", { id: "file-content", rows: 18 });
  content.value = file ? file.content : "";
  const save = async () => {
    const result = await api(projectPath("/files/content"), { method: "PUT",
      body: { path: path.value.trim(), content: content.value, version: file && path.value.trim() === file.path ? file.version : null } });
    notify(result.message, "ok");
    await loadFiles();
    if (result.file) await openFile(result.file.path);
  };
  const parts = [el("h2", {}, file ? file.path : "New memory file"), el("label", {}, "Path", path),
    el("label", {}, "Content (Markdown)", content),
    el("div", { class: "actions" }, action("Save", "file-save", save, "primary"))];
  if (file) {
    const rename = async () => {
      const result = await api(projectPath("/files/rename"), { method: "POST", body: { old_path: file.path, new_path: path.value.trim() } });
      notify(result.message, "ok");
      await loadFiles();
      await openFile(path.value.trim());
    };
    const remove = el("button", { type: "button", id: "file-delete", class: "danger" }, "Delete");
    remove.addEventListener("click", () => guarded(async () => {
      if (!remove.classList.contains("armed")) { remove.classList.add("armed"); remove.textContent = "Click again to delete"; return; }
      const result = await api(projectPath(`/files/content?path=${encodeURIComponent(file.path)}`), { method: "DELETE" });
      notify(result.message, "ok");
      box.hidden = true;
      await loadFiles();
    }));
    parts[3].append(action("Rename to the path above", "file-rename", rename), remove);
    parts.splice(1, 0, rich(file.content),
      el("p", { class: "muted" }, `${file.scope} scope · version ${file.version} · updated ${day(file.updated_at)}. `
        + "Saving refuses to overwrite a newer version; secrets are redacted."));
  }
  box.replaceChildren(...parts);
}

async function openFile(path) {
  fileEditor(await api(projectPath(`/files/content?path=${encodeURIComponent(path)}`)));
}

// ------------------------------------------------------------------ docmem trees and CLAUDE.md

function nodeLine(node) {
  return el("li", { class: "node", "data-id": node.id, onclick: () => openNode(node.id) },
    el("div", { class: "meta" }, el("code", {}, node.id), el("span", {}, node.context.filter(Boolean).join(":")),
      node.readonly ? el("span", { class: "tag" }, "readonly") : null, el("span", { class: "muted" }, `${node.token_count} tokens`)),
    el("div", { class: "snippet" }, node.content.slice(0, 200) || "(empty)"));
}

async function loadTrees() {
  if (!state.project) return;
  const data = await api(projectPath("/docmem"));
  $("#roots").replaceChildren(...data.roots.map(nodeLine));
  if (!data.roots.length) $("#roots").append(el("li", { class: "empty" }, "No docmem trees yet: Claude makes them with docmem_create. Each session is also a tree (Sessions → Tree)."));
  $("#documents").replaceChildren(...data.documents.map((d) => el("li", { class: "node", onclick: () => openNode(d.id) },
    el("div", { class: "meta" }, el("code", {}, d.id), el("span", { class: "muted" }, day(d.created_at))), el("div", {}, d.title))));
  if (!data.documents.length) $("#documents").append(el("li", { class: "empty" }, "No documents (ingest with `ccmemory docs ingest`)."));
}

async function openNode(id) {
  if (state.tab !== "trees") switchTab("trees");
  await guarded(async () => {
    const encoded = encodeURIComponent(id);
    const [data, expanded] = await Promise.all([api(projectPath(`/docmem/${encoded}`)),
      api(projectPath(`/docmem/${encoded}/expand?tokens=2000`))]);
    const box = $("#node");
    box.hidden = false;
    box.replaceChildren(
      el("div", { class: "crumbs" }, ...data.path.map((n, i) => [i ? " › " : "",
        el("a", { href: "#", onclick: (e) => { e.preventDefault(); openNode(n.id); } }, n.id)])),
      rich(data.node.content || "(no content)"),
      el("h3", {}, `Children (${data.children_total})`),
      el("ul", { class: "roots" }, ...data.children.map(nodeLine)),
      el("h3", {}, "Expanded to 2,000 tokens (what docmem_view would put in CLAUDE.md)"),
      el("pre", { class: "expansion" }, expanded.text));
  });
}

async function loadClaudeMd() {
  if (!state.project) return;
  const data = await api(projectPath("/claude-md"));
  const box = $("#claude-md");
  const parts = [el("p", {}, el("code", {}, data.path))];
  if (data.error) parts.push(el("p", { class: "error" }, data.error));
  else if (!data.exists) parts.push(el("p", { class: "muted" }, "This project has no CLAUDE.md, so docmem_view shows nothing there."));
  else if (!data.sections.length) parts.push(el("p", { class: "muted" }, "No docmem view is active: CLAUDE.md has no “# DOCMEM Dynamic” section. Claude adds one with docmem_view add <id>."));
  else {
    parts.push(el("p", {}, "Nodes shown: ", ...data.node_ids.map((id) => el("a", { href: "#", class: "node-link",
      onclick: (e) => { e.preventDefault(); openNode(id); } }, id, " "))));
    parts.push(...data.sections.map((text) => el("pre", { class: "expansion" }, text)));
  }
  box.replaceChildren(...parts);
}

// ------------------------------------------------------------------ storage

function renderStorage(data) {
  const s = data.storage, st = data.stats;
  const table = (rows) => el("table", { class: "facts" }, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v))));
  $("#storage").replaceChildren(
    el("h3", {}, "Data directory"), table([["path", s.data_dir], ["total", bytes(s.total_bytes)],
      ["database (with WAL)", bytes(s.database_bytes)], ["backups", bytes(s.backups_bytes)], ["logs", bytes(s.logs_bytes)],
      ["other", bytes(s.other_bytes)], ["files", s.files], ["pending embeddings (all projects)", data.pending_embeddings]]),
    el("h3", {}, "This project"), table([["memories", st.memories], ["deleted (in the trash)", st.deleted],
      ["superseded", st.superseded], ["sessions", st.sessions], ["documents", st.documents],
      ["by sector", Object.entries(st.by_sector).map(([k, v]) => `${k} ${v}`).join(", ") || "–"],
      ["by tier", Object.entries(st.by_tier).map(([k, v]) => `${k} ${v}`).join(", ") || "–"]]),
    el("h3", {}, "All projects"), table([["projects", data.all_projects.projects], ["memories", data.all_projects.memories],
      ["deleted", data.all_projects.deleted]]),
    budgetTable(data.budget),
    gcForm());
}

// The storage budget and what fills it: each project's estimated share of the database, by kind.
function budgetTable(b) {
  const rows = [["database", `${bytes(b.database_bytes)} of ${bytes(b.budget_bytes)}${b.over ? " (over budget)" : ""}`],
    ["consolidation undo log", bytes(b.undo_log_bytes)
      + (b.undo_log_kept_until ? `, kept until ${b.undo_log_kept_until.slice(0, 10)}` : "")],
    ...b.projects.map((p) => [p.path, `${bytes(p.bytes)} of ${bytes(b.project_budget_bytes)}: ` +
      Object.entries(p.by_kind).filter(([, v]) => v).map(([k, v]) => `${k} ${bytes(v)}`).join(", ")])];
  return el("div", {}, el("h3", {}, "Storage budget (estimated shares; `ccmemory consolidate`)"),
    el("table", { class: "facts" }, ...rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
}

// `ccmemory gc` for this project: a preview (dry run) first, then the real collection on a second click.
function gcForm() {
  const older = el("input", { id: "gc-older", type: "number", min: 0, value: 90 });
  const deleted = el("input", { id: "gc-deleted", type: "number", min: 0, value: 30 });
  const projectTier = el("input", { id: "gc-project-tier", type: "checkbox" });
  const result = el("p", { id: "gc-result", class: "muted" });
  const body = (dryRun) => ({ older_than_days: Number(older.value), deleted_after_days: Number(deleted.value),
    tiers: projectTier.checked ? ["session", "project"] : ["session"], dry_run: dryRun });
  const describe = (r) => `${r.dry_run ? "Would remove" : "Removed"} ${r.expired} expired and ${r.purged} `
    + `long-deleted memories${r.dry_run ? "" : `; database ${bytes(r.bytes_before)} → ${bytes(r.bytes_after)}`}.`;
  const run = el("button", { type: "button", id: "gc-run", class: "danger" }, "Collect");
  run.addEventListener("click", () => guarded(async () => {
    if (!run.classList.contains("armed")) {
      const preview = await api(projectPath("/gc"), { method: "POST", body: body(true) });
      result.textContent = `${describe(preview)} Click again to remove them.`;
      run.classList.add("armed"); run.textContent = "Click again to collect";
      return;
    }
    const report = await api(projectPath("/gc"), { method: "POST", body: body(false) });
    run.classList.remove("armed"); run.textContent = "Collect";
    result.textContent = describe(report);
    await loadBadge();
  }));
  return el("div", { class: "gc" }, el("h3", {}, "Garbage collection (ccmemory gc)"),
    el("label", {}, "Expire session-tier memories older than (days)", older),
    el("label", {}, el("span", {}, projectTier, " also expire project-tier memories")),
    el("label", {}, "Purge soft-deleted memories deleted more than (days) ago", deleted),
    el("div", { class: "actions" }, action("Preview", "gc-preview", async () => {
      result.textContent = describe(await api(projectPath("/gc"), { method: "POST", body: body(true) }));
    }), run), result);
}


// ------------------------------------------------------------------ tabs, live updates, start

function switchTab(tab) {
  state.tab = tab;
  for (const button of document.querySelectorAll("#tabs button")) button.classList.toggle("active", button.dataset.tab === tab);
  for (const view of document.querySelectorAll(".view")) view.hidden = view.id !== `view-${tab}`;
  return guarded(() => loadTab(tab));
}

function loadTab(tab, freshAfter = null) {
  switch (tab) {
    case "memories": return refreshList(freshAfter);
    case "sessions": return loadSessions();
    case "files": return loadFiles();
    case "trees": return loadTrees();
    case "claude-md": return loadClaudeMd();
    case "projects": return loadProjects().then(renderProjects);
    default: return api(projectPath("/stats")).then(renderStorage);
  }
}

function connectEvents() {
  if (state.events) state.events.close();
  const source = new EventSource(`/api/events?token=${encodeURIComponent(state.token)}`);
  state.events = source;
  const live = $("#live");
  source.addEventListener("ready", (event) => {
    state.latestSeq = JSON.parse(event.data).latest_seq;
    live.textContent = "live"; live.classList.add("on");
  });
  source.addEventListener("change", (event) => guarded(async () => {
    const data = JSON.parse(event.data);
    const before = state.latestSeq;
    state.latestSeq = data.latest_seq;
    if (data.latest_seq > before) await loadProjects();  // new memories: counts change, a project may be new
    await loadTab(state.tab, data.latest_seq > before ? before : null);
    await loadBadge();
  }));
  source.onerror = () => { live.textContent = "reconnecting"; live.classList.remove("on"); };
}

function bind() {
  $("#tabs").addEventListener("click", (event) => { if (event.target.dataset.tab) switchTab(event.target.dataset.tab); });
  $("#search-form").addEventListener("submit", (event) => { event.preventDefault(); guarded(() => runSearch()); });
  $("#clear-search").addEventListener("click", clearSearch);
  for (const id of ["#f-scope", "#f-sector", "#f-tier", "#f-category", "#f-superseded", "#f-deleted", "#f-team"]) {
    $(id).addEventListener("change", () => guarded(() => refreshList()));
  }
  $("#more").addEventListener("click", () => guarded(() => loadMemories({ append: true })));
  $("#more-sessions").addEventListener("click", () => guarded(() => loadSessions(true)));
  $("#new-memory").addEventListener("click", renderNew);
  $("#new-file").addEventListener("click", () => fileEditor(null));
  $("#project").addEventListener("change", () => {
    state.project = Number($("#project").value);
    sessionStorage.setItem("ccmemory-project", state.project);
    state.selected = null; state.session = null; state.searching = false;
    $("#detail").hidden = true; $("#session-chip").hidden = true; $("#q").value = "";
    showProjectPath();
    guarded(async () => { await loadTab(state.tab); await loadBadge(); });
  });
}

async function start() {
  readFragment();
  bind();
  if (!state.token) {
    notify("This page needs the address printed by `ccmemory ui` (it carries the access token).");
    return;
  }
  await guarded(async () => {
    await loadProjects();
    await loadMemories();
    await loadBadge();
    connectEvents();
    document.body.dataset.ready = "true";
  });
}

document.addEventListener("DOMContentLoaded", start);
