// Timeline keys as in Perfetto UI: W / S zoom in and out around the view's middle, A / D pan
// by a fifth of the view. They move the x range through Plotly.relayout, which the server's
// zoom callback answers exactly as it answers a drag.
(function () {
  "use strict";

  function timelinePlot() {
    var holder = document.getElementById("timeline-graph");
    return holder ? holder.querySelector(".js-plotly-plot") : null;
  }

  function nextRange(key, a, b) {
    var span = b - a, mid = (a + b) / 2;
    if (key === "w") return [mid - span * 0.3, mid + span * 0.3];
    if (key === "s") return [mid - span * 0.8, mid + span * 0.8];
    if (key === "a") return [a - span * 0.2, b - span * 0.2];
    if (key === "d") return [a + span * 0.2, b + span * 0.2];
    return null;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) {
      return;
    }
    var gd = timelinePlot();
    if (!gd || !gd.layout || !gd.layout.xaxis || !window.Plotly) return;
    var range = gd.layout.xaxis.range || [];
    var a = Number(range[0]), b = Number(range[1]);
    if (!isFinite(a) || !isFinite(b) || b <= a) return;
    var next = nextRange((event.key || "").toLowerCase(), a, b);
    if (!next) return;
    event.preventDefault();
    window.Plotly.relayout(gd, { "xaxis.range[0]": next[0], "xaxis.range[1]": next[1] });
  });
})();
