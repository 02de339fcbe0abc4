// The console's only script: copy buttons. Everything else is plain forms.
document.addEventListener("click", function (e) {
  var b = e.target.closest("[data-copy]");
  if (!b) return;
  var el = document.getElementById(b.getAttribute("data-copy"));
  if (!el) return;
  el.select();
  var done = function () { b.textContent = "Copied"; };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(el.value).then(done, function () { document.execCommand("copy"); done(); });
  } else {
    document.execCommand("copy");
    done();
  }
});

// The dashboard's live counters: its fragment is fetched again every 5 s.
(function () {
  var el = document.querySelector("[data-poll]");
  if (!el) return;
  setInterval(function () {
    fetch(el.getAttribute("data-poll"), { credentials: "same-origin" }).then(function (r) {
      return r.ok ? r.text() : null;
    }).then(function (html) {
      if (html !== null) el.innerHTML = html;
    }, function () {});
  }, 5000);
})();

// A form refused by the server comes back on the address it was posted
// to; the page says where the form lives, so the address bar (a reload, a
// bookmark, the back button) shows the form's own page.
(function () {
  var canon = document.body.getAttribute("data-canon");
  if (canon && window.history && history.replaceState && location.pathname !== canon) {
    history.replaceState(null, "", canon);
  }
})();
