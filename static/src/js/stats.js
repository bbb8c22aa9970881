// The analytics page's charts (docs/routes.md), drawn with uPlot from the
// numbers the page carries, which its tables show too: requests stacked
// by status class, and p50/p95/p99. A key under each says what its
// colours are, a tooltip follows the cursor; the charts follow their
// boxes' width.
function main() {
  var source = document.getElementById("stats-data");
  if (!source || !window.uPlot) return;
  var data = JSON.parse(source.textContent);
  var xs = data.series.map(function (p) { return Date.parse(p.at) / 1000; });
  var utc = function (ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); };

  function column(key) {
    return data.series.map(function (p) { return p[key]; });
  }
  var success = data.series.map(function (p) { return p.requests - p.errors_4xx - p.errors_5xx - p.limited; });
  var raw = [success, column("errors_4xx"), column("errors_5xx"), column("limited")];
  // Stacked: each series is drawn as the sum of itself and those below it,
  // the tallest first so that the others are drawn over it.
  var stacked = raw.map(function (_, i) {
    return xs.map(function (_, j) {
      var sum = 0;
      for (var k = 0; k <= i; k++) sum += raw[k][j];
      return sum;
    });
  });
  var classes = [
    { label: "2xx–3xx", color: "#059669" },
    { label: "4xx", color: "#d97706" },
    { label: "5xx", color: "#dc2626" },
    { label: "Limited", color: "#64748b" }
  ];

  function when(ts) {
    var d = new Date(ts * 1000).toISOString();
    return d.slice(0, 10) + " " + d.slice(11, 16) + " UTC";
  }

  // The time axis in UTC, as the tables: hours and minutes, the date where
  // a day begins (and only the date by day).
  var months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function tick(ts) {
    var d = new Date(ts * 1000);
    var date = months[d.getUTCMonth()] + " " + d.getUTCDate();
    var time = ("0" + d.getUTCHours()).slice(-2) + ":" + ("0" + d.getUTCMinutes()).slice(-2);
    if (data.step === "day") return date;
    return time === "00:00" ? date : time;
  }
  var timeAxis = { stroke: "#334155", values: function (u, ticks) { return ticks.map(tick); } };

  // tooltip shows, beside the cursor, the time and each series' value.
  function tooltip(values) {
    var tip;
    return {
      hooks: {
        init: function (u) {
          tip = document.createElement("div");
          tip.className = "chart-tip";
          tip.setAttribute("aria-hidden", "true");
          u.over.appendChild(tip);
        },
        setCursor: function (u) {
          var i = u.cursor.idx;
          if (i == null) { tip.style.display = "none"; return; }
          tip.textContent = "";
          var head = document.createElement("div");
          head.className = "chart-tip-head";
          head.textContent = when(xs[i]);
          tip.appendChild(head);
          values(i).forEach(function (v) {
            var line = document.createElement("div");
            var dot = document.createElement("span");
            dot.className = "chart-tip-dot";
            dot.style.background = v.color;
            line.appendChild(dot);
            line.appendChild(document.createTextNode(v.label + ": " + v.text));
            tip.appendChild(line);
          });
          tip.style.display = "block";
          var left = u.cursor.left, top = u.cursor.top;
          var w = tip.offsetWidth, width = u.over.clientWidth;
          tip.style.left = Math.min(Math.max(left + 12, 0), Math.max(width - w, 0)) + "px";
          tip.style.top = Math.max(top - tip.offsetHeight - 8, 0) + "px";
        }
      }
    };
  }

  // key writes, after a chart, what each colour stands for: the chart's
  // legend, which stays put (the tooltip follows the cursor).
  function key(box, items) {
    var list = document.createElement("ul");
    list.className = "chart-key";
    list.setAttribute("data-testid", box.id + "-key");
    items.forEach(function (it) {
      var li = document.createElement("li");
      var dot = document.createElement("span");
      dot.className = "chart-tip-dot";
      dot.style.background = it.color;
      li.appendChild(dot);
      li.appendChild(document.createTextNode(it.label));
      list.appendChild(li);
    });
    box.insertAdjacentElement("afterend", list);
  }

  // isolated draws a point where a value stands between gaps (a lone
  // minute draws no line), and every point where uPlot would.
  function isolated(u, i, show) {
    if (show) return null;
    var d = u.data[i], out = [];
    for (var j = 0; j < d.length; j++) {
      if (d[j] != null && (j === 0 || d[j - 1] == null) && (j === d.length - 1 || d[j + 1] == null)) out.push(j);
    }
    return out.length ? out : null;
  }

  function draw(box, opts, series) {
    opts.width = box.clientWidth;
    opts.height = 220;
    opts.tzDate = utc;
    opts.legend = { show: false };
    opts.cursor = { points: { show: false }, drag: { x: false, y: false } };
    var chart = new uPlot(opts, series, box);
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        if (box.clientWidth !== chart.width) chart.setSize({ width: box.clientWidth, height: 220 });
      }).observe(box);
    }
    return chart;
  }

  var requestsBox = document.getElementById("requests-chart");
  if (requestsBox) {
    var bars = uPlot.paths.bars({ size: [0.7, 24] });
    var order = [3, 2, 1, 0];
    draw(requestsBox, {
      plugins: [tooltip(function (i) {
        return classes.map(function (c, k) { return { label: c.label, color: c.color, text: String(raw[k][i]) }; });
      })],
      axes: [timeAxis, { stroke: "#334155", size: 48 }],
      scales: { y: { range: function (u, min, max) { return [0, Math.max(max, 1)]; } } },
      series: [{}].concat(order.map(function (k) {
        return { label: classes[k].label, stroke: classes[k].color, fill: classes[k].color, width: 0, paths: bars, points: { show: false } };
      }))
    }, [xs].concat(order.map(function (k) { return stacked[k]; })));
    key(requestsBox, classes);
  }

  var latencyBox = document.getElementById("latency-chart");
  if (latencyBox) {
    var lines = [
      { key: "p50_ms", label: "p50", color: "#1d4ed8" },
      { key: "p95_ms", label: "p95", color: "#7c3aed" },
      { key: "p99_ms", label: "p99", color: "#be123c" }
    ];
    var values = lines.map(function (l) { return column(l.key); });
    draw(latencyBox, {
      plugins: [tooltip(function (i) {
        return lines.map(function (l, k) { return { label: l.label, color: l.color, text: values[k][i] == null ? "—" : values[k][i].toFixed(1) + " ms" }; });
      })],
      axes: [timeAxis, { stroke: "#334155", size: 56, values: function (u, ticks) { return ticks.map(function (t) { return t + " ms"; }); } }],
      scales: { y: { range: function (u, min, max) { return [0, Math.max(max || 0, 1)]; } } },
      // Points where the data is sparse (uPlot's default), and where a
      // value stands alone between gaps, so that a lone minute shows.
      series: [{}].concat(lines.map(function (l) { return { label: l.label, stroke: l.color, width: 2, spanGaps: false, points: { size: 6, fill: l.color, filter: isolated } }; }))
    }, [xs].concat(values));
    key(latencyBox, lines);
  }
}

main();
