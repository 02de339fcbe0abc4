// The scanner page's service worker: it keeps the page's own files so the
// page opens without the network (a reload at a door whose network
// dropped). Network first, so an upgrade reaches the device at once; the
// door API itself is never cached (the page keeps its data itself).
var CACHE = "ticketd-door-v1";
var FILES = ["/door", "/door/app.js", "/door/app.css", "/door/jsqr.js"];

self.addEventListener("install", function (e) {
  e.waitUntil(caches.open(CACHE).then(function (c) { return c.addAll(FILES); }).then(function () { return self.skipWaiting(); }));
});

self.addEventListener("activate", function (e) {
  e.waitUntil(caches.keys().then(function (keys) {
    return Promise.all(keys.filter(function (k) { return k !== CACHE; }).map(function (k) { return caches.delete(k); }));
  }).then(function () { return self.clients.claim(); }));
});

self.addEventListener("fetch", function (e) {
  var u = new URL(e.request.url);
  if (e.request.method !== "GET" || u.origin !== self.location.origin || FILES.indexOf(u.pathname) < 0) { return; }
  e.respondWith(fetch(e.request).then(function (r) {
    if (r.ok) { var copy = r.clone(); caches.open(CACHE).then(function (c) { c.put(u.pathname, copy); }); }
    return r;
  }).catch(function () { return caches.match(u.pathname); }));
});
