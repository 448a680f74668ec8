// "Open in Perfetto UI": the documented way of handing a trace to ui.perfetto.dev from another
// page (perfetto.dev/docs/visualization/deep-linking-to-perfetto-ui): open the UI with
// window.open, post 'PING' until it answers 'PONG', then post
// {perfetto: {buffer, title, fileName, url}} with the trace's bytes. Needs the user's internet.
(function () {
  "use strict";
  var ORIGIN = "https://ui.perfetto.dev";
  var GIVE_UP_MS = 60000;

  function say(text) {
    var el = document.getElementById("perfetto-status");
    if (el) el.textContent = text;
  }

  function openInPerfetto(url, title, fileName) {
    var win = window.open(ORIGIN);
    if (!win) {
      say("The browser blocked the Perfetto UI window: allow pop-ups for this page.");
      return;
    }
    say("Opening " + fileName + " in Perfetto UI...");
    var bytes = fetch(url, { credentials: "same-origin" }).then(function (response) {
      if (!response.ok) throw new Error("HTTP " + response.status);
      return response.arrayBuffer();
    });
    var done = false;
    var timer = setInterval(function () {
      try { win.postMessage("PING", ORIGIN); } catch (e) { /* not loaded yet */ }
    }, 50);
    function stop() {
      done = true;
      clearInterval(timer);
      window.removeEventListener("message", onMessage);
    }
    function onMessage(event) {
      if (done || event.source !== win || event.origin !== ORIGIN || event.data !== "PONG") return;
      stop();
      bytes.then(function (buffer) {
        win.postMessage(
          { perfetto: { buffer: buffer, title: title, fileName: fileName, url: window.location.href } },
          ORIGIN
        );
        say("Sent " + fileName + " (" + buffer.byteLength + " bytes) to Perfetto UI.");
      }).catch(function (error) {
        say("Could not read the trace: " + error.message);
      });
    }
    window.addEventListener("message", onMessage);
    setTimeout(function () {
      if (!done) {
        stop();
        say("Perfetto UI did not answer: it needs access to https://ui.perfetto.dev.");
      }
    }, GIVE_UP_MS);
  }

  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest ? event.target.closest(".perfetto-open") : null;
    if (!button) return;
    event.preventDefault();
    var url = button.getAttribute("data-url");
    var name = url.split("/").pop();
    try { name = decodeURIComponent(name); } catch (e) { /* keep it encoded */ }
    openInPerfetto(url, button.getAttribute("data-title") || name, name);
  });
})();
