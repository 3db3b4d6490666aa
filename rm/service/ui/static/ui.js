// shepherd ResourceManager UI: "updated N s ago", live refresh of the page's content, the sign-in and the kill
// button.
// No framework and nothing fetched from anywhere but this RM.
(function () {
  "use strict";
  var body = document.body;
  var every = parseInt(body.getAttribute("data-refresh") || "0", 10) * 1000;
  var loadedAt = Date.now();
  var paused = false;
  var busy = false;
  var failures = 0;

  function stamp() {
    var el = document.getElementById("stamp");
    if (!el) { return; }
    var s = Math.max(0, Math.round((Date.now() - loadedAt) / 1000));
    el.textContent = "updated " + s + " s ago" + (paused ? " (paused)" : "") +
      (failures ? " (the RM did not answer)" : "");
    el.className = "stamp" + (failures || s > 3 * every / 1000 + 5 ? " stale" : "");
  }

  function editing() {
    var a = document.activeElement;
    return a && (a.tagName === "INPUT" || a.tagName === "SELECT" || a.tagName === "TEXTAREA");
  }

  function refresh() {
    if (paused || busy || document.hidden || editing()) { return; }
    busy = true;
    fetch(window.location.href, { headers: { Accept: "text/html" }, cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error(String(r.status)); } return r.text(); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (fresh && main) {
          var keep = saveKill();
          main.innerHTML = fresh.innerHTML;
          restoreKill(keep);
          wireKill();
        }
        loadedAt = Date.now();
        failures = 0;
      })
      .catch(function () { failures += 1; })
      .then(function () { busy = false; stamp(); });
  }

  // The kill panel keeps what the user typed and the last answer across refreshes.
  function saveKill() {
    var secret = document.getElementById("kill-secret");
    var result = document.getElementById("kill-result");
    return { secret: secret ? secret.value : "", text: result ? result.textContent : "",
             cls: result ? result.className : "" };
  }

  function restoreKill(keep) {
    var secret = document.getElementById("kill-secret");
    var result = document.getElementById("kill-result");
    if (secret && keep.secret) { secret.value = keep.secret; }
    if (result && keep.text) { result.textContent = keep.text; result.className = keep.cls; }
  }

  function say(text, cls) {
    var result = document.getElementById("kill-result");
    if (result) { result.textContent = text; result.className = cls; }
  }

  function wireKill() {
    var form = document.getElementById("kill-form");
    var panel = document.getElementById("kill");
    if (!form || !panel || form.getAttribute("data-wired")) { return; }
    form.setAttribute("data-wired", "1");
    var secret = document.getElementById("kill-secret");
    try {
      if (secret && !secret.value) { secret.value = sessionStorage.getItem("shepherd.secret") || ""; }
    } catch (e) { /* storage may be off */ }
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var app = panel.getAttribute("data-app");
      if (!window.confirm("Kill " + app + "? Its containers are stopped and it ends as KILLED.")) {
        say("Not killed.", "");
        return;
      }
      var headers = { "Content-Type": "application/json" };
      var key = secret ? secret.value.trim() : "";
      if (key) {
        headers.Authorization = "Bearer " + key;
        try { sessionStorage.setItem("shepherd.secret", key); } catch (e) { /* storage may be off */ }
      }
      var button = document.getElementById("kill-button");
      if (button) { button.disabled = true; }
      say("Asking the RM to kill " + app + "…", "");
      fetch("/ws/v1/cluster/apps/" + encodeURIComponent(app) + "/state", {
        method: "PUT", headers: headers, body: JSON.stringify({ state: "KILLED" }), cache: "no-store"
      }).then(function (r) {
        return r.text().then(function (text) { return { status: r.status, text: text }; });
      }).then(function (r) {
        var message = "";
        try {
          var data = JSON.parse(r.text);
          message = data.RemoteException ? data.RemoteException.message : (data.state || "");
        } catch (e) { message = r.text; }
        if (r.status === 200 || r.status === 202) {
          say("Killed: the RM answered state " + message + ".", "ok");
          setTimeout(refresh, 300);
        } else if (r.status === 401 || r.status === 403) {
          say("Refused (HTTP " + r.status + "): " + message + ". Killing needs the cluster's client secret.",
              "refused");
        } else {
          say("Refused (HTTP " + r.status + "): " + message, "refused");
        }
      }).catch(function (e) {
        say("The RM did not answer: " + e, "refused");
      }).then(function () {
        if (button) { button.disabled = false; }
      });
    });
  }

  // The sign-in field: the credential is kept in a cookie for /ui only (SameSite=Strict), so the RM renders the
  // pages for its user; the kill field starts from it too. Signing out forgets both.
  function setCredential(value) {
    document.cookie = "shepherd_credential=" + encodeURIComponent(value) + "; path=/ui; SameSite=Strict" +
      (value ? "" : "; max-age=0");
  }

  function wireSignIn() {
    var form = document.getElementById("signin");
    if (form) {
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        var field = document.getElementById("signin-credential");
        var value = field ? field.value.trim() : "";
        if (!value) { return; }
        setCredential(value);
        try { sessionStorage.setItem("shepherd.secret", value); } catch (e) { /* storage may be off */ }
        window.location.reload();
      });
    }
    var out = document.getElementById("signout");
    if (out) {
      out.addEventListener("click", function () {
        setCredential("");
        try { sessionStorage.removeItem("shepherd.secret"); } catch (e) { /* storage may be off */ }
        window.location.reload();
      });
    }
  }

  wireSignIn();
  wireKill();
  stamp();
  setInterval(stamp, 1000);
  if (every > 0) {
    var pause = document.getElementById("pause");
    if (pause) {
      pause.hidden = false;
      pause.addEventListener("click", function () {
        paused = !paused;
        pause.textContent = paused ? "resume" : "pause";
        stamp();
        if (!paused) { refresh(); }
      });
    }
    setInterval(refresh, every);
  }
})();
