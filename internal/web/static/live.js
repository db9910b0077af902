// Live updates of the dashboard's /runs and /runs/{taskId} pages over Socket.IO.
//
// Loaded with <script src> (the CSP allows no inline code). It asks /session/socket-token for
// a short-lived socket ticket (the session cookie is HttpOnly, so the page cannot read its JWT),
// connects, and applies execution-updated and execution-log events to elements found by id and
// data attributes. Log text is only ever inserted as text nodes (textContent), never as HTML.
(function () {
  'use strict';

  var csrf = document.querySelector('meta[name="csrf-token"]');
  var list = document.getElementById('runs-list'); // the runs list's part of /runs
  var notice = document.getElementById('live-notice');
  var run = document.getElementById('run'); // a run's facts, data-task="<taskId>"
  var logEl = document.getElementById('log');
  var search = document.getElementById('log-search');
  if (!csrf || (!list && !run)) { return; }

  // ---- Durations, as formatDuration in internal/web/pages.go.
  function duration(ms) {
    if (ms < 1000) { return ms + ' ms'; }
    if (ms < 60000) { return (ms / 1000).toFixed(1) + ' s'; }
    if (ms < 3600000) { return Math.floor(ms / 60000) + ' min ' + Math.floor(ms / 1000) % 60 + ' s'; }
    return Math.floor(ms / 3600000) + ' h ' + Math.floor(ms / 60000) % 60 + ' min';
  }

  // showRun updates the status and duration fields under el from an execution view.
  function showRun(el, e) {
    var status = el.querySelector('[data-field="status"]');
    if (status) {
      status.textContent = e.status;
      status.className = 'status status-' + String(e.status).toLowerCase();
    }
    var d = el.querySelector('[data-field="duration"]');
    if (d && e.startedAt) { d.textContent = duration(e.durationMs); }
  }

  var FINAL = ['PASSED', 'FAILED', 'UNSTABLE', 'ERROR', 'CANCELLED'];

  function onUpdate(e) {
    if (!e || typeof e.taskId !== 'string') { return; }
    if (run) {
      if (e.taskId !== run.dataset.task) { return; }
      showRun(run, e);
      if (FINAL.indexOf(e.status) >= 0) {
        if (notice) { notice.hidden = false; }
        catchUp(); // the run has ended: make sure the page has its whole log
      }
      return;
    }
    var row = Array.prototype.find.call(list.querySelectorAll('tr[data-task]'), function (tr) {
      return tr.dataset.task === e.taskId;
    });
    if (row) {
      showRun(row, e);
      // A final run gains its test counts and gate; a list filtered by status may lose it.
      if (FINAL.indexOf(e.status) >= 0 || list.dataset.status) { refresh(); }
      return;
    }
    if (list.dataset.project && e.projectId !== list.dataset.project) { return; }
    if (list.dataset.status && e.status !== list.dataset.status) { return; }
    refresh(); // a run this list may show: the server decides where it goes
  }

  // ---- The runs list is the server's: refresh fetches the list part of this very page (its
  // filters and page kept) and swaps it in, at most once a second however many events come.
  var refreshing = false, again = false;
  function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    var u = new URL(window.location.href);
    u.searchParams.set('fragment', 'list');
    fetch(u.toString(), { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
      if (!r.ok) { throw new Error('runs list: ' + r.status); }
      return r.text();
    }).then(function (html) {
      list.innerHTML = html; // the server's own template, escaped there
      document.body.dataset.listed = String(Date.now()); // for whoever waits on it (the browser tests)
    }, function () {}).then(function () {
      setTimeout(function () {
        refreshing = false;
        if (again) { again = false; refresh(); }
      }, 1000);
    });
  }

  // ---- The log: ANSI SGR codes as spans with classes, as renderLog in internal/web/ansi.go.
  var sgr = {};
  function applySGR(params) {
    var codes = params.split(';');
    for (var i = 0; i < codes.length; i++) {
      var n = codes[i] === '' ? 0 : parseInt(codes[i], 10);
      if (n === 0) { sgr = {}; }
      else if (n === 1) { sgr.bold = true; }
      else if (n === 2) { sgr.dim = true; }
      else if (n === 3) { sgr.italic = true; }
      else if (n === 4) { sgr.underline = true; }
      else if (n === 22) { sgr.bold = false; sgr.dim = false; }
      else if (n === 23) { sgr.italic = false; }
      else if (n === 24) { sgr.underline = false; }
      else if ((n >= 30 && n <= 37) || (n >= 90 && n <= 97)) { sgr.fg = n; }
      else if (n === 39) { sgr.fg = 0; }
      else if ((n >= 40 && n <= 47) || (n >= 100 && n <= 107)) { sgr.bg = n; }
      else if (n === 49) { sgr.bg = 0; }
      else if (n === 38 || n === 48) { i += codes[i + 1] === '5' ? 2 : codes[i + 1] === '2' ? 4 : 0; }
    }
  }
  function classes() {
    var c = [];
    if (sgr.fg) { c.push('ansi-' + sgr.fg); }
    if (sgr.bg) { c.push('ansi-' + sgr.bg); }
    ['bold', 'dim', 'italic', 'underline'].forEach(function (f) { if (sgr[f]) { c.push('ansi-' + f); } });
    return c.join(' ');
  }

  var openLine = null; // the last line while it has no newline yet
  var carry = ''; // an escape sequence cut at the end of a chunk
  var query = '';
  if (logEl && logEl.lastElementChild && !/\n$/.test(logEl.lastElementChild.textContent)) {
    openLine = logEl.lastElementChild;
  }

  function filter(line) {
    line.classList.toggle('filtered', query !== '' && line.textContent.toLowerCase().indexOf(query) < 0);
  }

  function text(s, touched) {
    if (s === '') { return; }
    if (!openLine) {
      openLine = document.createElement('span');
      openLine.className = 'ln';
      logEl.appendChild(openLine);
      touched.push(openLine);
    }
    var c = classes();
    if (c) {
      var span = document.createElement('span');
      span.className = c;
      span.textContent = s;
      openLine.appendChild(span);
    } else {
      openLine.appendChild(document.createTextNode(s));
    }
  }

  function appendLog(chunk) {
    var follow = logEl.scrollTop + logEl.clientHeight >= logEl.scrollHeight - 8;
    var s = carry + chunk, touched = openLine ? [openLine] : [];
    carry = '';
    var re = /\x1b\[([0-9;]*)([\x40-\x7e])?|\x1b|\n/g, at = 0, m;
    while ((m = re.exec(s)) !== null) {
      text(s.slice(at, m.index), touched);
      at = re.lastIndex;
      if (m[0] === '\n') {
        text('\n', touched);
        openLine = null;
      } else if (m[0] !== '\x1b' && m[2] === undefined && at === s.length) {
        carry = m[0]; // the rest comes with the next chunk
      } else if (m[2] === 'm') {
        applySGR(m[1]);
      } else if (m[0] === '\x1b' && at === s.length) {
        carry = m[0];
      }
    }
    text(s.slice(at), touched);
    touched.forEach(filter);
    var empty = document.getElementById('log-empty');
    if (empty) { empty.hidden = true; }
    if (follow) { logEl.scrollTop = logEl.scrollHeight; }
  }

  if (logEl) {
    logEl.scrollTop = logEl.scrollHeight; // follow the end until the user scrolls up
  }
  if (search && logEl) {
    search.addEventListener('input', function () {
      query = search.value.trim().toLowerCase();
      Array.prototype.forEach.call(logEl.children, filter);
    });
  }

  // ---- Following the log by byte offsets. The page holds the log's first `have` bytes
  // (data-offset on #log); each execution-log event says at which byte its text starts, so
  // text the page has is skipped, and a gap (lines sent before this socket joined, or events
  // the server dropped) is filled from /runs/{taskId}/log?from=<have>. Without data-offset
  // (a log cut at its first megabyte) the page does not follow the log.
  var enc = new TextEncoder(), dec = new TextDecoder();
  var have = logEl && logEl.dataset.offset ? parseInt(logEl.dataset.offset, 10) : -1;
  var held = [], fetching = false, stalls = 0;

  // take appends the part of bytes (starting at offset) the page does not have yet; bytes
  // past a gap wait in held for catchUp.
  function take(offset, bytes) {
    if (offset > have) { held.push({ offset: offset, bytes: bytes }); return false; }
    if (offset + bytes.length > have) {
      appendLog(dec.decode(bytes.subarray(have - offset)));
      have = offset + bytes.length;
    }
    return true;
  }

  function replayHeld() {
    var q = held.sort(function (a, b) { return a.offset - b.offset; });
    held = [];
    q.forEach(function (h) { take(h.offset, h.bytes); });
  }

  function catchUp() {
    if (have < 0 || fetching) { return; }
    fetching = true;
    var from = have, complete = false;
    fetch('/runs/' + encodeURIComponent(run.dataset.task) + '/log?from=' + from, {
      credentials: 'same-origin', cache: 'no-store'
    }).then(function (r) {
      if (!r.ok) { throw new Error('log: ' + r.status); }
      complete = r.headers.get('X-Log-Complete') === 'true';
      return r.arrayBuffer();
    }).then(function (buf) {
      fetching = false;
      var got = new Uint8Array(buf);
      if (got.length > 0) { take(from, got); }
      replayHeld();
      if (held.length === 0) { stalls = 0; return; }
      // The events run a little ahead of the stored log: ask again shortly. A gap the store
      // never fills (it failed to store some lines) is given up on after a few seconds.
      if (got.length === 0 && ++stalls > 20) {
        have = held[0].offset;
        replayHeld();
        stalls = 0;
        return;
      }
      setTimeout(catchUp, got.length > 0 && !complete ? 0 : 250);
    }, function () {
      fetching = false;
      if (held.length) { setTimeout(catchUp, 2000); }
    });
  }

  function onLog(p) {
    if (!run || !logEl || have < 0 || !p || p.taskId !== run.dataset.task || typeof p.log !== 'string') { return; }
    if (typeof p.offset !== 'number') { appendLog(p.log); return; }
    if (!take(p.offset, enc.encode(p.log))) { catchUp(); }
  }

  // ---- The connection.
  var stopped = false, retries = 0, socket;

  function ticket(cb) {
    fetch('/session/socket-token', {
      credentials: 'same-origin', cache: 'no-store',
      headers: { 'Accept': 'application/json', 'X-CSRF-Token': csrf.content }
    }).then(function (r) {
      // Signed out (401) or refused (403) stops it; a server that is briefly unavailable (503)
      // is asked again on the next attempt.
      if (r.status === 401 || r.status === 403) { stopped = true; }
      if (!r.ok) { throw new Error('socket token: ' + r.status); }
      return r.json();
    }).then(function (j) { cb({ token: j.token }); }, function () { cb({ token: '' }); });
  }

  function connect() {
    /* global io */
    socket = io({ auth: ticket });
    // Joined: fetch what the log gained between the page's rendering and now.
    socket.on('auth-success', function () {
      retries = 0;
      document.body.dataset.live = 'connected'; // for whoever waits on it (the browser tests)
      if (list) { refresh(); } // what changed before this socket joined
      catchUp();
    });
    socket.on('auth-error', function () {
      // The server disconnects after auth-error (an expired ticket or session): try again with
      // a fresh ticket a few times; a signed-out session stops it.
      if (stopped || retries >= 5) { return; }
      retries++;
      setTimeout(function () { socket.connect(); }, 2000 * retries);
    });
    socket.on('execution-updated', onUpdate);
    socket.on('execution-log', onLog);
  }

  var lib = document.createElement('script');
  lib.src = '/socket.io/socket.io.js';
  lib.onload = connect;
  document.head.appendChild(lib);
}());
