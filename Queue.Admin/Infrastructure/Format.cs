using System.Globalization;
using System.Security.Claims;
using Queue.Core.Admin;
using Queue.Core.Audit;

namespace Queue.Admin.Infrastructure;

/// <summary>How times, ages and reasons read on every page: UTC, compact, and the same everywhere.</summary>
public static class Format
{
    public static string Utc(DateTime t) => t.ToString("yyyy-MM-dd HH:mm:ss", CultureInfo.InvariantCulture) + " UTC";

    public static string Utc(DateTimeOffset t) => Utc(t.UtcDateTime);

    public static string Utc(DateTime? t) => t is { } v ? Utc(v) : "—";

    /// <summary>A duration as a person says it: "45 s", "12 min", "3 h 20 min", "4 d 2 h".</summary>
    public static string Span(TimeSpan s)
    {
        var neg = s < TimeSpan.Zero;
        if (neg)
        {
            s = s.Negate();
        }
        var text = s.TotalSeconds < 60 ? $"{(int)s.TotalSeconds} s"
            : s.TotalMinutes < 60 ? $"{(int)s.TotalMinutes} min"
            : s.TotalHours < 48 ? $"{(int)s.TotalHours} h {s.Minutes} min"
            : $"{(int)s.TotalDays} d {s.Hours} h";
        return neg ? "-" + text : text;
    }

    public static string Number(long n) => n.ToString("N0", CultureInfo.InvariantCulture);

    /// <summary>A fraction as a percentage with at most one decimal: "75 %", "33.3 %".</summary>
    public static string Percent(double fraction) => (fraction * 100).ToString("0.#", CultureInfo.InvariantCulture) + " %";

    public static string Mode(string mode) => mode switch
    {
        "smallest" => "smallest-first",
        "oldest" => "oldest-first",
        "override" => "override",
        _ => mode,
    };

    public static Actor ActorOf(ClaimsPrincipal user)
    {
        var id = long.TryParse(user.FindFirstValue(ClaimTypes.NameIdentifier), NumberStyles.None, CultureInfo.InvariantCulture, out var v) ? v : 0;
        return new Actor(id, user.Identity?.Name ?? "unknown");
    }
}

public static class Reasons
{
    /// <summary>Why a job sits where it does in the ordering, in words.</summary>
    public static string Explain(string mode, long value, OverrideInfo? ov, DateTime now)
    {
        if (mode == "override")
        {
            if (ov is null)
            {
                return "override switched off; the next rewrite restores the mode's value";
            }
            var when = ov.ExpiresAt > now
                ? $"expires {Format.Utc(ov.ExpiresAt)} (in {Format.Span(ov.ExpiresAt - now)})"
                : $"expired {Format.Utc(ov.ExpiresAt)}; the next rewrite restores the mode's value";
            return $"override by {ov.SetBy}: \u201c{ov.Reason}\u201d, {when}";
        }
        return mode switch
        {
            "smallest" => $"smallest-first: {Format.Number(value)} items not yet done or dead",
            "oldest" when value >= 10000 => $"oldest-first: number {Format.Number((value - 10000) / 5 + 1)} by age",
            "oldest" => "oldest-first",
            _ => mode,
        };
    }
}
