// calipers review: keyboard shortcuts and time on item. Served as a file so the pages' CSP
// can forbid inline script. The page works without it (plain forms).
(function () {
  "use strict";
  var form = document.getElementById("answer");
  if (!form) { return; }
  var start = Date.now();
  var sets = Array.prototype.slice.call(form.querySelectorAll("fieldset[data-q]"));
  var choosable = sets.filter(function (s) { return s.querySelector("input"); });
  var cur = 0;
  var arrows = { ArrowLeft: "left", ArrowRight: "right", ArrowDown: "tie" };

  function mark() {
    choosable.forEach(function (s, i) { s.classList.toggle("current", i === cur); });
  }
  function advance() {
    if (cur < choosable.length - 1) { cur += 1; }
    mark();
  }
  function typing(t) {
    return t && (t.tagName === "TEXTAREA" || (t.tagName === "INPUT" && t.type === "text"));
  }
  function stamp() {
    var s = form.querySelector("input[name=seconds]");
    if (s) { s.value = ((Date.now() - start) / 1000).toFixed(2); }
  }
  function submit(f) {
    if (f.requestSubmit) { f.requestSubmit(); } else { f.submit(); }
  }
  function pick(set, n) {
    if (!set) { return; }
    var boxes = set.querySelectorAll("input[type=radio], input[type=checkbox]");
    if (n >= boxes.length) { return; }
    var box = boxes[n];
    if (box.type === "checkbox") { box.checked = !box.checked; return; }
    box.checked = true;
    advance();
  }
  form.addEventListener("submit", stamp);
  form.addEventListener("change", function (e) {
    var set = e.target.closest("fieldset[data-q]");
    var i = choosable.indexOf(set);
    if (i >= 0 && e.target.type === "radio") { cur = i; advance(); }
  });
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (typing(t)) {
      if (e.key === "Escape") { t.blur(); e.preventDefault(); }
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); submit(form); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (t && (t.tagName === "BUTTON" || t.tagName === "A") && e.key === "Enter") { return; }
    var pref = form.querySelector("fieldset[data-type=preference]");
    if (pref && arrows[e.key]) {
      var r = pref.querySelector("input[value=" + arrows[e.key] + "]");
      if (r) { r.checked = true; cur = choosable.indexOf(pref); advance(); }
      e.preventDefault();
    } else if (/^[1-9]$/.test(e.key)) {
      pick(choosable[cur], Number(e.key) - 1);
      e.preventDefault();
    } else if (e.key === "Enter") {
      e.preventDefault();
      submit(form);
    } else if (e.key === "n" || e.key === "N") {
      advance();
    } else if (e.key === "c" || e.key === "C") {
      var ta = form.querySelector("textarea");
      if (ta) { ta.focus(); e.preventDefault(); }
    } else if (e.key === "s" || e.key === "S") {
      var skip = document.getElementById("skip");
      if (skip) { e.preventDefault(); submit(skip); }
    }
  });
  mark();
}());
