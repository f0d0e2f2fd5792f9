(() => {
  "use strict";
  const KEY = "sleuth.token";
  const $ = (id) => document.getElementById(id);
  let token = null;
  let epoch = 0;          // bumps on every sign-in/out: late answers of an old session are dropped
  let inflight = null;    // AbortController of the running question

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fillEvidence(list, evidence) {
    list.replaceChildren();
    for (const e of evidence || []) {
      const li = el("li");
      li.dataset.evidenceId = e.id || "";
      li.append(el("span", "eid", e.id), el("span", "summary", e.summary || ""));
      if (e.command) li.append(el("code", null, e.command));
      list.append(li);
    }
  }

  // 👍 / 👎 and "fixed by" under an answer that has a job id; clicks are handled once, on the document.
  function feedbackBlock(jobId) {
    const div = el("div", "feedback");
    div.dataset.jobId = jobId;
    const up = el("button", "secondary", "👍");
    up.type = "button"; up.dataset.verdict = "up"; up.title = "this answer helped";
    const down = el("button", "secondary", "👎");
    down.type = "button"; down.dataset.verdict = "down"; down.title = "this answer was wrong";
    const form = el("form", "feedback-fix row");
    const fix = el("input", "fixed-by");
    fix.maxLength = 500; fix.autocomplete = "off"; fix.placeholder = "fixed by… (what actually fixed it)";
    const send = el("button", "secondary", "Send");
    send.type = "submit";
    form.append(fix, send);
    div.append(up, down, form, el("span", "feedback-status"));
    return div;
  }

  async function sendFeedback(div, body) {
    const my = epoch;
    const status = div.querySelector(".feedback-status");
    const buttons = div.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    status.textContent = "";
    try {
      const resp = await api("/v1/feedback", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(Object.assign({ job_id: div.dataset.jobId }, body)) });
      if (my !== epoch) return false;
      if (!resp.ok) { status.textContent = await errorText(resp); return false; }
      const reply = await resp.json();
      if (my !== epoch) return false;
      status.textContent = reply.text || "thanks";
      return true;
    } catch (e) {
      if (my === epoch) status.textContent = "cannot reach Sleuth: " + e.message;
      return false;
    } finally {
      for (const b of buttons) b.disabled = false;
    }
  }

  // Only server-rendered Markdown (markdown-it, raw HTML disabled) ever goes to innerHTML.
  function assistantBubble(html, text, evidence, jobId) {
    const li = el("li", "msg assistant");
    li.append(el("span", "who", "sleuth"));
    const body = el("div", "answer");
    if (html) body.innerHTML = html; else body.textContent = text || "";
    li.append(body);
    if (evidence && evidence.length) {
      const ol = el("ol", "evidence");
      fillEvidence(ol, evidence);
      li.append(ol);
    }
    if (jobId) li.append(feedbackBlock(jobId));
    return li;
  }

  function userBubble(text) {
    const li = el("li", "msg user");
    li.append(el("span", "who", "you"), el("span", null, text));
    return li;
  }

  function resetCurrent() {
    $("current").hidden = true;
    $("current-question").textContent = "";
    $("progress").replaceChildren();
    $("answer").replaceChildren();
    delete $("answer").dataset.status;
    $("evidence").replaceChildren();
    $("current-feedback").replaceChildren();
  }

  function clearView() {
    $("conversation").replaceChildren();
    resetCurrent();
    $("whoami").textContent = "";
    $("error").textContent = "";
    $("signin-error").textContent = "";
    $("question").value = "";
    $("ask").disabled = false;
  }

  function showSignedOut() {
    $("signin-panel").hidden = false;
    $("chat").hidden = true;
    $("ask-form").hidden = true;
    $("signout").hidden = true;
  }

  function showSignedIn() {
    $("signin-panel").hidden = true;
    $("chat").hidden = false;
    $("ask-form").hidden = false;
    $("signout").hidden = false;
  }

  function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({ "Authorization": "Bearer " + token }, opts.headers || {});
    return fetch(path, Object.assign({}, opts, { headers }));
  }

  async function errorText(resp) {
    try {
      const body = await resp.json();
      return (body.error || resp.statusText) + (body.request_id ? " (request " + body.request_id + ")" : "");
    } catch (_) {
      return resp.status + " " + resp.statusText;
    }
  }

  function signOut() {
    epoch += 1;
    if (inflight) { inflight.abort(); inflight = null; }
    token = null;
    sessionStorage.removeItem(KEY);
    clearView();
    $("token").value = "";
    selectChannel("");
    $("channel-messages").replaceChildren();
    $("channels").hidden = true;
    showSignedOut();
  }

  async function signIn(candidate) {
    signOut();
    const my = epoch;
    token = candidate;
    let resp;
    try {
      resp = await api("/v1/whoami");
    } catch (e) {
      if (my === epoch) { token = null; $("signin-error").textContent = "cannot reach Sleuth: " + e.message; }
      return;
    }
    if (my !== epoch) return;
    if (!resp.ok) {
      const msg = await errorText(resp);
      if (my !== epoch) return;
      token = null;
      $("signin-error").textContent = msg;
      return;
    }
    const me = await resp.json();
    if (my !== epoch) return;
    sessionStorage.setItem(KEY, candidate);
    $("token").value = "";
    $("whoami").textContent = "signed in as " + me.user + (me.groups && me.groups.length ? " (" + me.groups.join(", ") + ")" : "");
    $("whoami").dataset.user = me.user;
    showSignedIn();
    await loadConversation(my);
    await loadChannels(my);
    $("question").focus();
  }

  // ------------------------------------------------------------ channels
  let channel = "";       // "" = the private conversation
  let channelTimer = null;

  async function loadChannels(my) {
    const nav = $("channels");
    for (const b of Array.from(nav.querySelectorAll("button[data-channel]:not([data-channel=''])"))) b.remove();
    const resp = await api("/v1/channels");
    if (my !== epoch || !resp.ok) return;
    const body = await resp.json();
    if (my !== epoch) return;
    for (const name of body.channels || []) {
      const b = el("button", "", "#" + name);
      b.type = "button";
      b.dataset.channel = name;
      nav.append(b);
    }
    nav.hidden = !(body.channels || []).length;
  }

  function selectChannel(name) {
    channel = name;
    for (const b of $("channels").querySelectorAll("button[data-channel]")) {
      b.setAttribute("aria-current", b.dataset.channel === name ? "true" : "false");
    }
    if (channelTimer) { clearInterval(channelTimer); channelTimer = null; }
    $("channel-view").hidden = !name;
    $("chat").hidden = !!name;
    $("ask-form").hidden = !!name;
    if (name) {
      $("channel-messages").replaceChildren();
      refreshChannel(epoch);
      channelTimer = setInterval(() => refreshChannel(epoch), 3000);
    }
  }

  async function refreshChannel(my) {
    const name = channel;
    if (!name) return;
    const resp = await api("/v1/channels/" + encodeURIComponent(name) + "/messages");
    if (my !== epoch || name !== channel) return;
    if (!resp.ok) { $("channel-error").textContent = await errorText(resp); return; }
    const body = await resp.json();
    if (my !== epoch || name !== channel) return;
    $("channel-error").textContent = "";
    const list = $("channel-messages");
    list.replaceChildren();
    for (const m of body.messages || []) {
      const bubble = el("li", "msg " + (m.author === "sleuth" ? "bot" : "user"));
      bubble.append(el("span", "who", m.author + " · " + new Date(m.created_at * 1000).toLocaleString()));
      const div = el("div", "answer");
      div.innerHTML = m.html || "";   // rendered server-side from Markdown with HTML escaped
      bubble.append(div);
      list.append(bubble);
    }
  }

  async function sendToChannel(ev) {
    ev.preventDefault();
    const text = $("channel-text").value.trim();
    if (!text || !channel) return;
    const my = epoch;
    $("channel-send").disabled = true;
    try {
      const resp = await api("/v1/channels/" + encodeURIComponent(channel) + "/messages", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ text }) });
      if (my !== epoch) return;
      if (!resp.ok) { $("channel-error").textContent = await errorText(resp); return; }
      $("channel-text").value = "";
      await refreshChannel(my);
    } finally {
      $("channel-send").disabled = false;
    }
  }

  async function loadConversation(my) {
    const resp = await api("/v1/conversation");
    if (my !== epoch) return;
    if (!resp.ok) { $("error").textContent = await errorText(resp); return; }
    const body = await resp.json();
    if (my !== epoch) return;
    const list = $("conversation");
    list.replaceChildren();
    for (const m of body.messages || []) {
      list.append(m.role === "user" ? userBubble(m.text) : assistantBubble(m.html, m.text, m.evidence, m.job_id));
    }
  }

  // The finished turn moves into the conversation list; the live elements are reused for the next one.
  function archiveCurrent() {
    if ($("current").hidden) return;
    const q = $("current-question").textContent;
    if (q) $("conversation").append(userBubble(q));
    const li = el("li", "msg assistant");
    li.append(el("span", "who", "sleuth"));
    const body = el("div", "answer");
    for (const n of $("answer").childNodes) body.append(n.cloneNode(true));
    if (!body.childNodes.length) body.textContent = $("error").textContent || "(no answer)";
    li.append(body);
    if ($("evidence").childNodes.length) {
      const ol = el("ol", "evidence");
      for (const n of $("evidence").childNodes) ol.append(n.cloneNode(true));
      li.append(ol);
    }
    for (const n of $("current-feedback").childNodes) li.append(n.cloneNode(true));
    $("conversation").append(li);
    resetCurrent();
  }

  function addProgress(stage, message) {
    const li = el("li", "progress-line");
    li.append(el("span", "stage", stage), document.createTextNode(message ? " " + message : ""));
    $("progress").append(li);
    scrollDown();
  }

  function scrollDown() {
    window.scrollTo(0, document.body.scrollHeight);
  }

  function showResult(d) {
    $("answer").innerHTML = d.answer_html || "";
    if (d.result && d.result.status) $("answer").dataset.status = d.result.status;
    fillEvidence($("evidence"), (d.result && d.result.evidence) || []);
    $("current-feedback").replaceChildren();
    if (d.job_id) $("current-feedback").append(feedbackBlock(d.job_id));
    scrollDown();
  }

  function handleEvent(raw) {
    let type = "message";
    const data = [];
    for (const line of raw.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const c = line.indexOf(":");
      const field = c < 0 ? line : line.slice(0, c);
      let value = c < 0 ? "" : line.slice(c + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") type = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return "";
    const d = JSON.parse(data.join("\n"));
    if (type === "accepted" && d.resumed) addProgress("reconnected", "waiting for the answer");
    else if (type === "accepted") addProgress("accepted", "investigating");
    else if (type === "progress") addProgress(d.stage, d.message);
    else if (type === "result") showResult(d);
    else if (type === "error") $("error").textContent = d.error + (d.request_id ? " (request " + d.request_id + ")" : "");
    return type;
  }

  function newRequestId() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  }

  function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

  // True when the stream ended with the answer or an error (else the connection was lost).
  async function readEvents(resp, my) {
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    let finished = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (my !== epoch) { reader.cancel(); return true; }
      if (done) break;
      buf += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const raw = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const type = handleEvent(raw);
        if (type === "result" || type === "error") finished = true;
      }
    }
    return finished;
  }

  // One question; when the connection is lost (the gateway restarted), the same request again
  // (same X-Request-Id): the gateway answers it from the job already running, never twice.
  const RECONNECT_FOR_MS = 180000;

  async function ask(ev) {
    ev.preventDefault();
    const q = $("question").value.trim();
    if (!q || !token) return;
    archiveCurrent();
    const my = epoch;
    $("error").textContent = "";
    $("current").hidden = false;
    $("current-question").textContent = q;
    $("question").value = "";
    $("ask").disabled = true;
    inflight = new AbortController();
    const rid = newRequestId();
    const giveUp = Date.now() + RECONNECT_FOR_MS;
    let wait = 500;
    try {
      for (;;) {
        let lost = "";
        try {
          const resp = await api("/v1/query?stream=1", {
            method: "POST",
            headers: { "Content-Type": "application/json", "Accept": "text/event-stream", "X-Request-Id": rid },
            body: JSON.stringify({ query: q }),
            signal: inflight.signal,
          });
          if (my !== epoch) return;
          // 503 with Retry-After: Sleuth is busy (its queue is full), not lost: say so and stop.
          if (resp.status === 503 && resp.headers.get("Retry-After")) { $("error").textContent = await errorText(resp); return; }
          if (resp.status === 502 || resp.status === 503) lost = resp.status + " " + resp.statusText;
          else if (!resp.ok) { $("error").textContent = await errorText(resp); return; }
          else if (await readEvents(resp, my)) return;
          else lost = "the answer stream ended early";
        } catch (e) {
          if (my !== epoch || e.name === "AbortError") return;
          lost = e.message;
        }
        if (Date.now() > giveUp) { $("error").textContent = "connection lost: " + lost; return; }
        $("error").textContent = "connection lost (" + lost + "); reconnecting…";
        await sleep(wait);
        wait = Math.min(wait * 2, 5000);
        if (my !== epoch) return;
        $("error").textContent = "";
      }
    } finally {
      if (my === epoch) { $("ask").disabled = false; inflight = null; }
    }
  }

  $("signin-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("token").value.trim();
    if (t) signIn(t);
  });
  $("signout").addEventListener("click", signOut);
  $("channels").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-channel]");
    if (b) selectChannel(b.dataset.channel);
  });
  $("channel-form").addEventListener("submit", sendToChannel);
  $("ask-form").addEventListener("submit", ask);
  document.addEventListener("click", (ev) => {
    const b = ev.target.closest(".feedback button[data-verdict]");
    if (b && token) sendFeedback(b.closest(".feedback"), { verdict: b.dataset.verdict });
  });
  document.addEventListener("submit", async (ev) => {
    const form = ev.target.closest("form.feedback-fix");
    if (!form) return;
    ev.preventDefault();
    const input = form.querySelector(".fixed-by");
    const text = input.value.trim();
    if (text && token && await sendFeedback(form.closest(".feedback"), { fixed_by: text })) input.value = "";
  });
  $("question").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("ask-form").requestSubmit(); }
  });

  const saved = sessionStorage.getItem(KEY);
  if (saved) signIn(saved); else showSignedOut();
})();
