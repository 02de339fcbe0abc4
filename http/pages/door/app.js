// The door scanner (decisions §18): a device key kept in localStorage, the
// event's passes kept in IndexedDB and followed through the door stream,
// verdicts from the server when it answers and from the local list when
// it does not, and offline scans queued in localStorage (so a reload keeps
// them) and sent in batches when the network returns.
(function () {
  "use strict";

  var LS = "ticketd.door.";
  var BATCH_MAX = 500;          // scans per request (the API's bound)
  var ONLINE_WAIT_MS = 3000;    // an online scan waits this long for the server
  var FLUSH_EVERY_MS = 2000;    // queue flush period while it holds scans
  var VERDICT_MS = 2600;        // how long a verdict stays up
  var REPEAT_MS = 3500;         // the camera ignores the same code this long
  var STREAM_RETRY_MS = 1000;

  var $ = function (id) { return document.getElementById(id); };
  var key = localStorage.getItem(LS + "key");
  var device = readJSON(LS + "device") || {};
  var info = readJSON(LS + "event");           // GET /door/v1/event
  var cursor = localStorage.getItem(LS + "cursor") || "";
  var queue = readJSON(LS + "queue") || [];    // scans not yet accepted by the server
  var passes = new Map();                       // registrationId -> pass
  var byCode = new Map();                       // check-in code -> registrationId
  var online = navigator.onLine;
  var syncing = false;
  var db = null;

  function readJSON(k) {
    try { return JSON.parse(localStorage.getItem(k) || "null"); } catch (e) { return null; }
  }
  function writeJSON(k, v) { localStorage.setItem(k, JSON.stringify(v)); }
  function saveQueue() { writeJSON(LS + "queue", queue); render(); }

  // ---- the network ----------------------------------------------------

  function api(method, path, body, timeoutMs) {
    var ctl = new AbortController();
    var timer = setTimeout(function () { ctl.abort(); }, timeoutMs || 15000);
    var h = { "Accept": "application/json" };
    if (key) { h["Authorization"] = "Bearer " + key; }
    if (body !== undefined) { h["Content-Type"] = "application/json"; }
    return fetch(path, { method: method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal: ctl.signal, cache: "no-store" })
      .then(function (r) {
        clearTimeout(timer);
        return r.json().catch(function () { return {}; }).then(function (j) {
          if (!r.ok) { var e = new Error((j.error && j.error.message) || ("HTTP " + r.status)); e.status = r.status; throw e; }
          return j;
        });
      }, function (e) { clearTimeout(timer); throw e; });
  }

  function setOnline(v) {
    if (online !== v) { online = v; render(); if (v) { flush(); } }
  }

  function unauthorized(e) {
    if (e && e.status === 401) {
      localStorage.removeItem(LS + "key");
      key = null;
      showSetup("This device's key was revoked or is unknown: set it up again.");
      return true;
    }
    return false;
  }

  // ---- the local list (IndexedDB) -------------------------------------

  function openDB() {
    return new Promise(function (resolve) {
      if (!window.indexedDB) { resolve(null); return; }
      var req = indexedDB.open("ticketd-door", 1);
      req.onupgradeneeded = function () { req.result.createObjectStore("passes", { keyPath: "registrationId" }); };
      req.onsuccess = function () { resolve(req.result); };
      req.onerror = function () { resolve(null); };
    });
  }

  function loadPasses() {
    return new Promise(function (resolve) {
      if (!db) { resolve(); return; }
      var req = db.transaction("passes").objectStore("passes").getAll();
      req.onsuccess = function () { (req.result || []).forEach(putPass); resolve(); };
      req.onerror = function () { resolve(); };
    });
  }

  function storePasses(list) {
    if (!db || list.length === 0) { return Promise.resolve(); }
    return new Promise(function (resolve) {
      var tx = db.transaction("passes", "readwrite");
      var st = tx.objectStore("passes");
      list.forEach(function (p) { st.put(p); });
      tx.oncomplete = tx.onerror = tx.onabort = function () { resolve(); };
    });
  }

  function putPass(p) {
    var old = passes.get(p.registrationId);
    if (old && old.checkinCode !== p.checkinCode) { byCode.delete(old.checkinCode); }
    // Local check-ins the server has not seen yet stay until it has.
    if (old && old.localCheckins) {
      var pending = old.localCheckins.filter(function (lc) { return !hasCheckin(p, lc.subjectType, lc.subjectId); });
      if (pending.length) { p.localCheckins = pending; }
    }
    passes.set(p.registrationId, p);
    byCode.set(String(p.checkinCode).toUpperCase(), p.registrationId);
  }

  function hasCheckin(p, type, id) {
    return (p.checkins || []).concat(p.localCheckins || []).find(function (c) {
      return c.subjectType === type && (type === "event" || (c.subjectId || "") === (id || ""));
    });
  }

  // ---- sync: the event, the passes, the stream -----------------------

  function loadEvent() {
    return api("GET", "/door/v1/event").then(function (ev) {
      info = ev;
      writeJSON(LS + "event", ev);
      setOnline(true);
      fillDoors();
    });
  }

  function syncPasses() {
    if (syncing) { return Promise.resolve(); }
    syncing = true; render();
    var step = function () {
      var p = "/door/v1/passes" + (cursor ? "?cursor=" + encodeURIComponent(cursor) : "");
      return api("GET", p).then(function (page) {
        page.data.forEach(putPass);
        return storePasses(page.data).then(function () {
          cursor = page.nextCursor;
          localStorage.setItem(LS + "cursor", cursor);
          render();
          return page.hasMore ? step() : null;
        });
      });
    };
    return step().then(function () { syncing = false; setOnline(true); render(); },
      function (e) { syncing = false; render(); if (!unauthorized(e)) { setOnline(false); } throw e; });
  }

  // follow reads the door stream with fetch (EventSource cannot send the
  // device key), resuming from the last cursor; it reconnects for ever.
  function follow() {
    if (!key) { return; }
    var h = { "Authorization": "Bearer " + key, "Accept": "text/event-stream" };
    if (cursor) { h["Last-Event-ID"] = cursor; }
    fetch("/door/v1/stream", { headers: h, cache: "no-store" }).then(function (r) {
      if (r.status === 401) { unauthorized({ status: 401 }); return; }
      if (r.status === 400) { cursor = ""; return syncPasses().catch(function () {}).then(retry); }
      if (!r.ok || !r.body) { throw new Error("stream " + r.status); }
      setOnline(true);
      var reader = r.body.getReader();
      var dec = new TextDecoder();
      var buf = "", id = "", batch = [];
      var pump = function () {
        return reader.read().then(function (x) {
          if (x.done) { throw new Error("stream ended"); }
          buf += dec.decode(x.value, { stream: true });
          var i;
          while ((i = buf.indexOf("\n")) >= 0) {
            var line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (line.indexOf("data: ") === 0) {
              try { batch.push(JSON.parse(line.slice(6))); } catch (e) { /* a broken line is skipped */ }
            } else if (line.indexOf("id: ") === 0) {
              id = line.slice(4);
            } else if (line === "" && batch.length) {
              batch.forEach(putPass);
              storePasses(batch);
              batch = [];
              if (id) { cursor = id; localStorage.setItem(LS + "cursor", cursor); }
              render();
            }
          }
          return pump();
        });
      };
      return pump();
    }).catch(function () { retry(); });
    function retry() { setTimeout(follow, STREAM_RETRY_MS); }
  }

  // flush sends the queue in batches; the server's verdicts replace the
  // local ones (a conflict, if any, is the console's to show).
  function flush() {
    if (!key || queue.length === 0 || flush.busy) { return Promise.resolve(); }
    flush.busy = true;
    var batch = queue.slice(0, BATCH_MAX);
    return api("POST", "/door/v1/scans", { scans: batch.map(wire) }).then(function (res) {
      var done = new Set(batch.map(function (s) { return s.scanId; }));
      queue = queue.filter(function (s) { return !done.has(s.scanId); });
      saveQueue();
      res.results.forEach(applyResult);
      flush.busy = false;
      setOnline(true);
      if (queue.length) { return flush(); }
    }, function (e) {
      flush.busy = false;
      if (!unauthorized(e) && !e.status) { setOnline(false); }
      if (e.status === 400) { // a malformed scan would block the queue for ever
        queue = queue.slice(batch.length); saveQueue();
      }
    });
  }

  function wire(s) {
    var o = { scanId: s.scanId, subjectType: s.subjectType, scannedAt: s.scannedAt, offline: !!s.offline };
    if (s.subjectId) { o.subjectId = s.subjectId; }
    if (s.registrationId) { o.registrationId = s.registrationId; } else { o.checkinCode = s.checkinCode; }
    if (s.admittedOffline) { o.admittedOffline = true; }
    return o;
  }

  function applyResult(r) {
    var c = r.checkin;
    if (r.verdict !== "admitted" || !c) { return; }
    var p = passes.get(c.registrationId);
    if (p && !hasCheckin(p, c.subjectType, c.subjectId)) {
      p.checkins = (p.checkins || []).concat([{ subjectType: c.subjectType, subjectId: c.subjectId, checkedInAt: c.checkedInAt, deviceId: c.deviceId }]);
      putPass(p);
      storePasses([p]);
      render();
    }
  }

  // ---- scanning --------------------------------------------------------

  function currentDoor() {
    var doors = (info && info.doors) || [{ subjectType: "event", subjectId: null }];
    var i = Number(localStorage.getItem(LS + "door") || 0);
    return doors[i] || doors[0];
  }

  function newScanID() {
    if (window.crypto && crypto.randomUUID) { return crypto.randomUUID(); }
    return Date.now().toString(36) + Math.random().toString(36).slice(2);
  }

  // localVerdict decides a scan from the local list, as the server would.
  function localVerdict(s) {
    var id = s.registrationId || byCode.get(String(s.checkinCode || "").trim().toUpperCase());
    var p = id && passes.get(id);
    if (!p) { return { verdict: "refused", reason: "NOT_FOUND" }; }
    var first = hasCheckin(p, s.subjectType, s.subjectId);
    if (first) { return { verdict: "already_checked_in", pass: p, firstCheckin: first }; }
    if (p.status !== "confirmed") { return { verdict: "refused", reason: "REGISTRATION_NOT_CONFIRMED", pass: p }; }
    return { verdict: "admitted", pass: p };
  }

  function scan(what) {
    if (!key) { return; }
    var d = currentDoor();
    var s = { scanId: newScanID(), subjectType: d.subjectType, subjectId: d.subjectId || undefined, scannedAt: new Date().toISOString() };
    if (what.registrationId) { s.registrationId = what.registrationId; } else { s.checkinCode = String(what.code).trim(); }
    if (!s.registrationId && !s.checkinCode) { return; }
    var local = localVerdict(s);
    var offline = function () {
      s.offline = true;
      s.admittedOffline = local.verdict === "admitted";
        queue.push(s);
      admitLocally(s);
      saveQueue();
      show(local, true);
    };
    if (!online || !navigator.onLine) { offline(); return; }
    api("POST", "/door/v1/scans", { scans: [wire(s)] }, ONLINE_WAIT_MS).then(function (res) {
      var r = res.results[0];
      applyResult(r);
      var p = r.registrationId ? passes.get(r.registrationId) : null;
      show({ verdict: r.verdict, reason: r.reason, firstCheckin: r.firstCheckin, pass: p || local.pass }, false);
    }, function (e) {
      if (unauthorized(e)) { return; }
      if (e.status) { show({ verdict: "refused", reason: e.message }, false); return; }
      setOnline(false);
      offline();
    });
  }

  // admitLocally marks a queued scan the device admitted on the pass, so
  // the next scan of it is amber before the server has it. The queue is
  // the record: a reload replays it.
  function admitLocally(s) {
    if (!s.admittedOffline) { return; }
    var id = s.registrationId || byCode.get(String(s.checkinCode || "").trim().toUpperCase());
    var p = id && passes.get(id);
    if (!p || hasCheckin(p, s.subjectType, s.subjectId)) { return; }
    p.localCheckins = (p.localCheckins || []).concat([{ subjectType: s.subjectType, subjectId: s.subjectId || null, checkedInAt: s.scannedAt, deviceId: device.id || null }]);
  }

  // ---- the verdict -----------------------------------------------------

  var reasons = {
    NOT_FOUND: "No such ticket for this event",
    REGISTRATION_NOT_CONFIRMED: "Ticket not valid (not confirmed)",
    DOOR_NOT_ALLOWED: "Not valid at this door"
  };

  function deviceName(id) {
    if (!id) { return "the front desk"; }
    var list = (info && info.devices) || [];
    for (var i = 0; i < list.length; i++) { if (list[i].id === id) { return list[i].name; } }
    return "another device";
  }

  function doorName(type, id) {
    var list = (info && info.doors) || [];
    for (var i = 0; i < list.length; i++) {
      if (list[i].subjectType === type && (type === "event" || list[i].subjectId === id)) { return list[i].name; }
    }
    return type;
  }

  var hideTimer = 0;
  function show(v, fromLocal) {
    var el = $("verdict");
    var titles = { admitted: "Admitted", already_checked_in: "Already checked in", refused: "Refused" };
    el.dataset.verdict = v.verdict;
    el.dataset.source = fromLocal ? "local" : "server";
    $("verdict-title").textContent = titles[v.verdict] || v.verdict;
    var p = v.pass;
    $("verdict-name").textContent = p ? (p.name || p.email) : "";
    var detail = "";
    if (v.verdict === "already_checked_in" && v.firstCheckin) {
      var at = new Date(v.firstCheckin.checkedInAt);
      detail = "in at " + at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) + " · " +
        doorName(v.firstCheckin.subjectType, v.firstCheckin.subjectId) + " · " + deviceName(v.firstCheckin.deviceId);
    } else if (v.verdict === "refused") {
      detail = reasons[v.reason] || v.reason || "";
    } else if (fromLocal) {
      detail = "offline: will sync";
    }
    $("verdict-detail").textContent = detail;
    el.hidden = false;
    feedback(v.verdict);
    clearTimeout(hideTimer);
    hideTimer = setTimeout(hide, VERDICT_MS);
    render();
  }

  function hide() { $("verdict").hidden = true; $("code").focus(); }

  var audio = null;
  function feedback(verdict) {
    try {
      var active = !navigator.userActivation || navigator.userActivation.hasBeenActive;
      if (navigator.vibrate && active) { navigator.vibrate(verdict === "admitted" ? 120 : verdict === "refused" ? [300, 100, 300] : [150, 80, 150]); }
      if (!audio && window.AudioContext) { audio = new AudioContext(); }
      if (!audio || audio.state !== "running") { return; }
      var o = audio.createOscillator(), g = audio.createGain();
      o.frequency.value = verdict === "admitted" ? 880 : verdict === "refused" ? 220 : 440;
      g.gain.value = 0.15;
      o.connect(g); g.connect(audio.destination);
      o.start(); o.stop(audio.currentTime + (verdict === "admitted" ? 0.15 : 0.45));
    } catch (e) { /* feedback is best effort */ }
  }

  // ---- the camera ------------------------------------------------------

  var lastCode = "", lastAt = 0;
  function detected(code) {
    var now = Date.now();
    if (!$("verdict").hidden || (code === lastCode && now - lastAt < REPEAT_MS)) { return; }
    lastCode = code; lastAt = now;
    scan({ code: code });
  }

  function startCamera() {
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) { return; }
    navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" }, audio: false }).then(function (stream) {
      var video = $("video");
      video.srcObject = stream;
      video.play();
      $("camera").hidden = true;
      if (audio && audio.resume) { audio.resume(); }
      var detector = null;
      var ready = ("BarcodeDetector" in window) ? BarcodeDetector.getSupportedFormats().then(function (f) {
        if (f.indexOf("qr_code") >= 0) { detector = new BarcodeDetector({ formats: ["qr_code"] }); }
      }).catch(function () {}) : Promise.resolve();
      ready.then(function () { document.body.dataset.decoder = detector ? "BarcodeDetector" : "jsQR"; loop(); });
      var canvas = $("frame"), ctx = canvas.getContext("2d", { willReadFrequently: true });
      function loop() {
        if (video.readyState < 2) { setTimeout(loop, 150); return; }
        if (detector) {
          detector.detect(video).then(function (codes) {
            if (codes.length) { detected(codes[0].rawValue); }
          }).catch(function () {}).then(function () { setTimeout(loop, 150); });
          return;
        }
        var w = Math.min(640, video.videoWidth), h = Math.round(video.videoHeight * w / video.videoWidth);
        if (w && h) {
          canvas.width = w; canvas.height = h;
          ctx.drawImage(video, 0, 0, w, h);
          var img = ctx.getImageData(0, 0, w, h);
          var code = window.jsQR && jsQR(img.data, w, h, { inversionAttempts: "dontInvert" });
          if (code && code.data) { detected(code.data); }
        }
        setTimeout(loop, 150);
      }
    }, function (e) {
      $("camera").textContent = "Camera unavailable";
    });
  }

  // ---- search and the keyboard wedge ----------------------------------

  function search(q) {
    var out = $("results");
    out.textContent = "";
    q = q.trim().toLowerCase();
    if (q.length < 2) { return; }
    var d = currentDoor(), n = 0;
    passes.forEach(function (p) {
      if (n >= 20) { return; }
      if ((p.name || "").toLowerCase().indexOf(q) < 0 && (p.email || "").toLowerCase().indexOf(q) < 0 &&
        String(p.checkinCode).toLowerCase().indexOf(q) < 0) { return; }
      n++;
      var li = document.createElement("li");
      var who = document.createElement("div");
      who.className = "who";
      who.textContent = p.name || p.email;
      var small = document.createElement("small");
      small.textContent = p.email + " · " + p.checkinCode + " · " + p.status;
      who.appendChild(small);
      li.appendChild(who);
      if (hasCheckin(p, d.subjectType, d.subjectId)) {
        var badge = document.createElement("span");
        badge.className = "in";
        badge.textContent = "IN";
        li.appendChild(badge);
      }
      var b = document.createElement("button");
      b.type = "button";
      b.textContent = "Check in";
      b.addEventListener("click", function () { scan({ registrationId: p.registrationId }); $("code").value = ""; out.textContent = ""; });
      li.appendChild(b);
      out.appendChild(li);
    });
  }

  // ---- the bar ---------------------------------------------------------

  var renderQueued = false;
  function render() {
    if (renderQueued) { return; }
    renderQueued = true;
    requestAnimationFrame(function () {
      renderQueued = false;
      var st = $("sync-state");
      var state = !online ? "offline" : (syncing || queue.length) ? "syncing" : "online";
      st.className = "state " + state;
      st.textContent = state === "online" ? "online · synced" : state;
      $("queued").textContent = String(queue.length);
      var d = currentDoor(), expected = 0, inside = 0;
      passes.forEach(function (p) {
        if (p.status === "confirmed") { expected++; }
        if (hasCheckin(p, d.subjectType, d.subjectId)) { inside++; }
      });
      $("counts").textContent = inside + " / " + expected;
      document.body.dataset.passes = String(passes.size);
    });
  }

  function fillDoors() {
    var sel = $("door");
    sel.textContent = "";
    ((info && info.doors) || []).forEach(function (d, i) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = d.name + (d.venueName ? " · " + d.venueName : "");
      sel.appendChild(o);
    });
    sel.value = localStorage.getItem(LS + "door") || "0";
    sel.hidden = sel.options.length < 2;
    $("event-name").textContent = (info && info.name) || "Door";
  }

  function showSetup(msg) {
    $("setup").hidden = false;
    $("scanner").hidden = true;
    $("setup-error").textContent = msg || "";
  }

  // ---- start -----------------------------------------------------------

  function initialize() {
    var params = new URLSearchParams(location.search);
    var code = params.get("setup");
    if (!code) { return Promise.resolve(); }
    params.delete("setup");
    history.replaceState(null, "", "/door" + (params.toString() ? "?" + params.toString() : ""));
    return api("POST", "/door/v1/device/initialize", { setupCode: code }).then(function (r) {
      key = r.key;
      device = { id: r.deviceId, name: r.name, eventId: r.eventId };
      localStorage.setItem(LS + "key", key);
      writeJSON(LS + "device", device);
      if (device.eventId !== (info && info.id)) { // a new event: forget the old one's list
        cursor = ""; localStorage.removeItem(LS + "cursor"); passes.clear(); byCode.clear();
        if (db) { db.transaction("passes", "readwrite").objectStore("passes").clear(); }
      }
    }, function (e) {
      if (!key) { showSetup("The setup link was already used or has expired (" + e.message + "): ask for a new one."); }
    });
  }

  window.addEventListener("online", function () { setOnline(true); loadEvent().then(syncPasses).catch(function () {}); });
  window.addEventListener("offline", function () { setOnline(false); });
  $("verdict").addEventListener("click", hide);
  $("camera").addEventListener("click", function () {
    if (!audio && window.AudioContext) { audio = new AudioContext(); }
    startCamera();
  });
  $("door").addEventListener("change", function () { localStorage.setItem(LS + "door", $("door").value); render(); });
  $("entry").addEventListener("submit", function (e) {
    e.preventDefault();
    var v = $("code").value;
    $("code").value = "";
    $("results").textContent = "";
    if (v.trim()) { scan({ code: v }); }
  });
  $("code").addEventListener("input", function () { search($("code").value); });

  if (navigator.serviceWorker) {
    navigator.serviceWorker.register("/door-sw.js", { scope: "/door" }).catch(function () { /* the page works online without it */ });
  }
  openDB().then(function (d) { db = d; return loadPasses(); }).then(function () { queue.forEach(admitLocally); }).then(initialize).then(function () {
    if (!key) { showSetup(); return; }
    $("scanner").hidden = false;
    fillDoors();
    render();
    loadEvent().catch(function (e) { if (!unauthorized(e)) { setOnline(false); } })
      .then(function () { return key && syncPasses().catch(function () {}); })
      .then(function () {
        document.body.dataset.ready = "1";
        if (!key) { return; }
        follow();
        flush();
        setInterval(function () { if (queue.length) { flush(); } }, FLUSH_EVERY_MS);
        if (new URLSearchParams(location.search).get("camera") === "1") { startCamera(); }
      });
  });
})();
