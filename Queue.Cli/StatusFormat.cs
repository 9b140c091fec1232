using System.Globalization;
using Queue.Client;

namespace Queue.Cli;

/// <summary>Status lines for people: counts by state, position and ETA in plain words.</summary>
internal static class StatusFormat
{
    public static string Line(JobStatus s, DateTimeOffset now)
    {
        var i = s.Items;
        var finished = i.Done + i.Dead + i.Cancelled;
        var percent = i.Total == 0 ? 100 : 100.0 * finished / i.Total;
        return string.Create(CultureInfo.InvariantCulture,
            $"job {s.Id} '{s.Name}' {s.State}: {finished}/{i.Total} items finished ({percent:F0}%) | ready {i.Ready}, leased {i.Leased}, done {i.Done}, dead {i.Dead}, cancelled {i.Cancelled} | position {Position(s.Position, s.PositionExact)} | eta {Eta(s.Eta, now)}");
    }

    public static string Position(long? position, bool exact) =>
        position is { } p ? (exact ? "" : "~") + p.ToString(CultureInfo.InvariantCulture) : "-";

    public static string Eta(DateTimeOffset? eta, DateTimeOffset now) =>
        eta is { } e ? $"{e.UtcDateTime:yyyy-MM-dd HH:mm:ss}Z (in {Span(e - now)})" : "-";

    public static string Span(TimeSpan t) => t <= TimeSpan.Zero ? "now"
        : t.TotalHours >= 1 ? string.Create(CultureInfo.InvariantCulture, $"{(int)t.TotalHours}h{t.Minutes:D2}m")
        : t.TotalMinutes >= 1 ? string.Create(CultureInfo.InvariantCulture, $"{t.Minutes}m{t.Seconds:D2}s")
        : string.Create(CultureInfo.InvariantCulture, $"{t.Seconds}s");
}
