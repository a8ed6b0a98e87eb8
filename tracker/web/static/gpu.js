/* Price-history charts of the GPU page: one chart per GPU id, drawn with the plotly.js the
   app serves itself (/static/plotly.min.js). Data comes from the page
   (<script id="history-data" type="application/json">); null values are gaps, never bridged. */
(function () {
  "use strict";
  var source = document.getElementById("history-data");
  if (!source || !window.Plotly) { return; }
  var data = JSON.parse(source.textContent);
  var palette = ["#2457c5", "#e67e22", "#16a085", "#8e44ad", "#c0392b", "#2c3e50", "#d4a017",
                 "#1abc9c", "#7f8c8d", "#e84393", "#00838f", "#6d4c41", "#5c6bc0", "#9e9d24",
                 "#ad1457", "#26a69a"];

  function money(v) { return "$" + v.toFixed(v >= 10 ? 2 : 3); }
  var narrow = window.matchMedia("(max-width: 720px)").matches;
  var PLOT_HEIGHT = narrow ? 320 : 380;

  data.charts.forEach(function (c) {
    var div = document.getElementById("chart-" + c.gpu);
    if (!div) { return; }
    var traces = [];
    Object.keys(c.providers).forEach(function (p, i) {
      traces.push({
        x: c.x, y: c.providers[p], name: p, type: "scatter", mode: "lines+markers", connectgaps: false,
        line: { width: 1.5, color: palette[i % palette.length] }, marker: { size: 5 }, opacity: 0.85,
        hovertemplate: p + ": $%{y:.3f}<extra></extra>"
      });
    });
    traces.push({
      x: c.x, y: c.median, name: "market median", type: "scatter", mode: "lines+markers", connectgaps: false,
      line: { width: 2, color: "#6b7385", dash: "dash" }, marker: { size: 5, color: "#6b7385" },
      hovertemplate: "median: $%{y:.3f}<extra></extra>"
    });
    traces.push({
      x: c.x, y: c.min, name: "market min", type: "scatter", mode: "lines+markers", connectgaps: false,
      line: { width: 3, color: "#1d2330" }, marker: { size: 7, color: "#1d2330" },
      hovertemplate: "min: $%{y:.3f}<extra></extra>"
    });
    var shapes = [], annotations = [];
    if (c.all_time_low !== null && c.all_time_low !== undefined) {
      shapes.push({ type: "line", xref: "paper", x0: 0, x1: 1, y0: c.all_time_low, y1: c.all_time_low,
                    line: { color: "#1f8a4c", width: 1.5, dash: "dot" } });
      var where = "(" + (c.all_time_low_provider || "") + ", " + (c.all_time_low_at || "") + ")";
      // above its line and right of the y axis: below the line it would run onto the x axis and its
      // labels whenever the low is near the bottom of the range
      annotations.push({ xref: "paper", x: 0.01, xanchor: "left", y: c.all_time_low, yanchor: "bottom", showarrow: false,
                         font: { size: 11, color: "#1f8a4c" }, align: "left",
                         text: "all-time low " + money(c.all_time_low) + (narrow ? "<br>" : " ") + where });
    }
    div.style.height = PLOT_HEIGHT + "px";
    var layout = {
      autosize: true,
      margin: narrow ? { l: 44, r: 8, t: 8, b: 36 } : { l: 60, r: 20, t: 8, b: 40 },
      hovermode: "x unified",
      xaxis: { type: "date", title: { text: "UTC (" + c.resolution + ")" }, gridcolor: "#eef1f6",
               range: c.x_range || undefined, nticks: narrow ? 4 : undefined, automargin: true },
      // y labels sit just above their grid line, clear of the first x label in the corner
      yaxis: { title: { text: c.unit }, rangemode: "tozero", tickprefix: "$", gridcolor: "#eef1f6", automargin: true,
               ticklabelposition: "outside top" },
      // above the plot: the legend grows upwards, away from the axis titles, however many rows it wraps into
      legend: { orientation: "h", x: 0, xanchor: "left", y: 1.02, yanchor: "bottom", font: { size: narrow ? 11 : 12 } },
      shapes: shapes, annotations: annotations,
      paper_bgcolor: "#ffffff", plot_bgcolor: "#ffffff",
      font: { family: "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", size: narrow ? 11 : 12 }
    };
    var config = { responsive: true, displaylogo: false, displayModeBar: narrow ? false : "hover" };
    Plotly.newPlot(div, traces, layout, config).then(fitHeight);
  });

  // The plot area keeps PLOT_HEIGHT: the chart grows by what its legend takes (more rows on a
  // phone). Its size stays the container's (autosize), so the responsive resize keeps working.
  function fitHeight(div) {
    var legend = div.querySelector("g.legend");
    var want = Math.round(PLOT_HEIGHT + (legend ? legend.getBoundingClientRect().height : 0));
    if (Math.abs(div.getBoundingClientRect().height - want) > 4) {
      div.style.height = want + "px";
      return Plotly.Plots.resize(div);
    }
  }

  var resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () {
      document.querySelectorAll(".chart.js-plotly-plot").forEach(function (div) { fitHeight(div); });
    }, 200);
  });
})();
