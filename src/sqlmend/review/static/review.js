// sqlmend review: keyboard for the list and item pages (plain JavaScript, no build step).
// j/k next/previous, a accept, r reject, e edit, Ctrl+Enter check the edit, u back to the list,
// on the list: j/k move the cursor, Enter (or o) opens the item.
(function () {
  "use strict";
  var body = document.body;
  var page = body.getAttribute("data-page");

  function typing(el) {
    return el && (el.tagName === "TEXTAREA" || el.tagName === "INPUT" || el.tagName === "SELECT" || el.isContentEditable);
  }
  function go(url) { if (url) { window.location.href = url; } }
  function submit(id) {
    var f = document.getElementById(id);
    if (f && !f.dataset.sent) { f.dataset.sent = "1"; f.submit(); }
  }

  // filters submit on change
  document.querySelectorAll("select[data-autosubmit]").forEach(function (s) {
    s.addEventListener("change", function () { s.form.submit(); });
  });

  var rows = Array.prototype.slice.call(document.querySelectorAll("#items tbody tr.row"));
  var cursor = rows.length ? 0 : -1;
  function mark() {
    rows.forEach(function (r, i) { r.classList.toggle("cursor", i === cursor); });
    if (cursor >= 0) { rows[cursor].scrollIntoView({block: "nearest"}); }
  }
  if (page === "list") {
    mark();
    rows.forEach(function (r) {
      r.addEventListener("click", function (ev) { if (ev.target.tagName !== "A") { go(r.getAttribute("data-href")); } });
    });
  }

  var editBox = document.getElementById("edit");
  var editSql = document.getElementById("edit-sql");
  function openEdit() {
    if (!editBox) { return; }
    editBox.classList.remove("hidden");
    editSql.focus();
    editSql.setSelectionRange(editSql.value.length, editSql.value.length);
  }
  var editButton = document.getElementById("edit-button");
  if (editButton) { editButton.addEventListener("click", openEdit); }

  document.addEventListener("keydown", function (ev) {
    if (typing(ev.target)) {
      if (ev.target === editSql && ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault(); submit("edit-form");
      } else if (ev.key === "Escape") {
        ev.target.blur();
      }
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) { return; }
    var k = ev.key;
    if (page === "list") {
      if (k === "j" && cursor < rows.length - 1) { cursor++; mark(); }
      else if (k === "k" && cursor > 0) { cursor--; mark(); }
      else if ((k === "Enter" || k === "o") && cursor >= 0) { go(rows[cursor].getAttribute("data-href")); }
      else { return; }
      ev.preventDefault();
      return;
    }
    if (page !== "item") { return; }
    if (k === "j") { go(body.getAttribute("data-next")); }
    else if (k === "k") { go(body.getAttribute("data-prev")); }
    else if (k === "a") { submit("accept-form"); }
    else if (k === "r") { submit("reject-form"); }
    else if (k === "e") { openEdit(); }
    else if (k === "u") { go(body.getAttribute("data-list")); }
    else { return; }
    ev.preventDefault();
  });
})();
