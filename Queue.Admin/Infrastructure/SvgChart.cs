using System.Globalization;
using System.Text;
using System.Text.Encodings.Web;
using Microsoft.AspNetCore.Html;

namespace Queue.Admin.Infrastructure;

/// <summary>
/// A per-minute line chart drawn on the server as inline SVG: no script, no chart library, nothing fetched from
/// elsewhere, so it works on offline machines and with JavaScript off.
/// </summary>
public static class SvgChart
{
    private const int Width = 720;
    private const int Height = 170;
    private const int Left = 56;
    private const int Right = 28;
    private const int Top = 12;
    private const int Bottom = 24;

    /// <param name="points">Minute and value, in time order; minutes with no snapshot are gaps in the line.</param>
    public static IHtmlContent Line(string title, IReadOnlyList<(DateTime At, long Value)> points, DateTime from, DateTime to, string cssClass)
    {
        var plotW = Width - Left - Right;
        var plotH = Height - Top - Bottom;
        var max = Math.Max(1, points.Count == 0 ? 1 : points.Max(p => p.Value));
        var span = Math.Max(1, (to - from).TotalSeconds);
        double X(DateTime t) => Left + (t - from).TotalSeconds / span * plotW;
        double Y(long v) => Top + plotH - (double)v / max * plotH;
        var inv = CultureInfo.InvariantCulture;
        var total = points.Sum(p => p.Value);
        var sb = new StringBuilder();
        var label = HtmlEncoder.Default.Encode(title);
        sb.Append(inv, $"<svg class=\"chart {cssClass}\" viewBox=\"0 0 {Width} {Height}\" role=\"img\" aria-label=\"{label}\" xmlns=\"http://www.w3.org/2000/svg\">");
        sb.Append(inv, $"<title>{label}: {total} in total, peak {max} per minute</title>");
        // Axes and gridlines: 0, half and max.
        foreach (var frac in new[] { 0.0, 0.5, 1.0 })
        {
            var y = Top + plotH - frac * plotH;
            sb.Append(inv, $"<line class=\"grid\" x1=\"{Left}\" y1=\"{y:0.#}\" x2=\"{Width - Right}\" y2=\"{y:0.#}\"/>");
            sb.Append(inv, $"<text class=\"axis\" x=\"{Left - 6}\" y=\"{y + 4:0.#}\" text-anchor=\"end\">{max * frac:0.#}</text>");
        }
        for (var h = 0; h <= 24; h += 6)
        {
            var t = from.AddHours(h);
            var x = X(t);
            sb.Append(inv, $"<line class=\"grid\" x1=\"{x:0.#}\" y1=\"{Top}\" x2=\"{x:0.#}\" y2=\"{Top + plotH}\"/>");
            sb.Append(inv, $"<text class=\"axis\" x=\"{x:0.#}\" y=\"{Height - 6}\" text-anchor=\"middle\">{t:HH:mm}</text>");
        }
        // One polyline per run of consecutive minutes, so an hour without snapshots shows as a gap, not as a slope.
        var run = new StringBuilder();
        DateTime? prev = null;
        void Flush()
        {
            if (run.Length > 0)
            {
                sb.Append(inv, $"<polyline class=\"series\" points=\"{run}\"/>");
                run.Clear();
            }
        }
        foreach (var (at, value) in points)
        {
            if (prev is { } p && at - p > TimeSpan.FromMinutes(2))
            {
                Flush();
            }
            run.Append(inv, $"{X(at):0.#},{Y(value):0.#} ");
            prev = at;
        }
        Flush();
        if (points.Count == 0)
        {
            sb.Append(inv, $"<text class=\"axis\" x=\"{Left + plotW / 2}\" y=\"{Top + plotH / 2}\" text-anchor=\"middle\">no snapshots in the last 24 h (is Queue.Scheduler running?)</text>");
        }
        sb.Append("</svg>");
        return new HtmlString(sb.ToString());
    }
}
