using System.CommandLine;
using System.Globalization;

namespace Queue.Cli;

/// <summary><c>queue explain &lt;job&gt;</c>: why the job is where it is, readably.</summary>
internal static class ExplainCommand
{
    public static Command Build()
    {
        var job = new Argument<long>("job") { Description = "the job's id" };
        var command = new Command("explain", "why a job is where it is in the queue") { job };
        command.SetAction((parse, ct) => QueueCli.WithClientAsync(parse, async (client, output) =>
        {
            var e = await client.ExplainJobAsync(parse.GetValue(job), ct);
            var now = DateTimeOffset.UtcNow;
            var inv = CultureInfo.InvariantCulture;
            await output.WriteLineAsync(e.Summary);
            await output.WriteLineAsync(string.Create(inv, $"  position   {StatusFormat.Position(e.Position, e.PositionExact)} ({e.JobsAhead} jobs ahead)"));
            await output.WriteLineAsync(string.Create(inv, $"  ahead      smaller {e.Ahead.Smaller}, older {e.Ahead.Older}, override {e.Ahead.Override}, another tenant's turn {e.Ahead.AnotherTenantsTurn}"));
            await output.WriteLineAsync(string.Create(inv, $"  policy     {e.Policy}, mode {e.Mode}, value {(e.Value is { } v ? v.ToString(inv) : "-")}{(e.Blocked ? ", BLOCKED" : "")}"));
            if (e.Override)
            {
                await output.WriteLineAsync($"  override   until {StatusFormat.Eta(e.OverrideUntil, now)}");
            }
            await output.WriteLineAsync($"  next       rewrite at {StatusFormat.Eta(e.NextRewrite.At, now)}, mode {e.NextRewrite.Mode}");
            await output.WriteLineAsync(e.Eta is { } eta
                ? string.Create(inv, $"  eta        between {StatusFormat.Eta(eta.Earliest, now)} and {StatusFormat.Eta(eta.Latest, now)} at {eta.ItemsPerSecond:F1} items/s")
                : "  eta        - (no recent throughput)");
            return 0;
        }));
        return command;
    }
}
