using System.Globalization;
using System.Net;
using System.Text;

namespace Queue.Bench.Simulation;

/// <summary>A hand-written SVG line chart (no scripts, no external resources): one line per series.</summary>
public static class SvgPlot
{
    private static readonly string[] Palette =
    [
        "#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
        "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
    ];

    /// <param name="series">Name and points (x, y), x ascending.</param>
    public static string Lines(string title, string xLabel, string yLabel, IReadOnlyList<(string Name, IReadOnlyList<(double X, double Y)> Points)> series)
    {
        const int width = 900, height = 520, left = 70, right = 170, top = 40, bottom = 50;
        var plotW = width - left - right;
        var plotH = height - top - bottom;
        var maxX = Math.Max(1e-9, series.SelectMany(s => s.Points).Select(p => p.X).DefaultIfEmpty(1).Max());
        var maxY = Math.Max(1, series.SelectMany(s => s.Points).Select(p => p.Y).DefaultIfEmpty(1).Max());
        maxY = Nice(maxY);
        string F(double v) => v.ToString("0.#", CultureInfo.InvariantCulture);
        double Px(double x) => left + (x / maxX * plotW);
        double Py(double y) => top + plotH - (y / maxY * plotH);

        var sb = new StringBuilder();
        sb.Append(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n");
        sb.Append(CultureInfo.InvariantCulture, $"<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n");
        sb.Append(CultureInfo.InvariantCulture, $"<text x=\"{width / 2}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{WebUtility.HtmlEncode(title)}</text>\n");
        for (var i = 0; i <= 5; i++)
        {
            var y = maxY * i / 5;
            sb.Append(CultureInfo.InvariantCulture, $"<line x1=\"{left}\" y1=\"{F(Py(y))}\" x2=\"{left + plotW}\" y2=\"{F(Py(y))}\" stroke=\"#e0e0e0\"/>");
            sb.Append(CultureInfo.InvariantCulture, $"<text x=\"{left - 6}\" y=\"{F(Py(y) + 4)}\" text-anchor=\"end\">{F(y)}</text>\n");
            var x = maxX * i / 5;
            sb.Append(CultureInfo.InvariantCulture, $"<text x=\"{F(Px(x))}\" y=\"{top + plotH + 18}\" text-anchor=\"middle\">{F(x)}</text>\n");
        }
        sb.Append(CultureInfo.InvariantCulture, $"<rect x=\"{left}\" y=\"{top}\" width=\"{plotW}\" height=\"{plotH}\" fill=\"none\" stroke=\"#333\"/>\n");
        sb.Append(CultureInfo.InvariantCulture, $"<text x=\"{left + (plotW / 2)}\" y=\"{height - 12}\" text-anchor=\"middle\">{WebUtility.HtmlEncode(xLabel)}</text>\n");
        sb.Append(CultureInfo.InvariantCulture, $"<text transform=\"translate(18 {top + (plotH / 2)}) rotate(-90)\" text-anchor=\"middle\">{WebUtility.HtmlEncode(yLabel)}</text>\n");
        for (var s = 0; s < series.Count; s++)
        {
            var color = Palette[s % Palette.Length];
            var pts = string.Join(' ', series[s].Points.Select(p => $"{F(Px(p.X))},{F(Py(p.Y))}"));
            sb.Append(CultureInfo.InvariantCulture, $"<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"1.6\" points=\"{pts}\"/>\n");
            var ly = top + 8 + (s * 18);
            sb.Append(CultureInfo.InvariantCulture, $"<line x1=\"{left + plotW + 12}\" y1=\"{ly}\" x2=\"{left + plotW + 32}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"3\"/>");
            sb.Append(CultureInfo.InvariantCulture, $"<text x=\"{left + plotW + 38}\" y=\"{ly + 4}\">{WebUtility.HtmlEncode(series[s].Name)}</text>\n");
        }
        sb.Append("</svg>\n");
        return sb.ToString();
    }

    private static double Nice(double max)
    {
        var mag = Math.Pow(10, Math.Floor(Math.Log10(max)));
        foreach (var m in new[] { 1, 2, 2.5, 5, 10 })
        {
            if (m * mag >= max)
            {
                return m * mag;
            }
        }
        return 10 * mag;
    }
}
