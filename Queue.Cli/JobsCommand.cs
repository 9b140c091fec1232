using System.CommandLine;

namespace Queue.Cli;

/// <summary><c>queue jobs [--state S] [--limit N]</c>: the caller's jobs, newest first, one line each.</summary>
internal static class JobsCommand
{
    public static Command Build()
    {
        var state = new Option<string?>("--state") { Description = "open, closed, done or cancelled" };
        var limit = new Option<int>("--limit") { Description = "how many (1 to 500)", DefaultValueFactory = _ => 50 };
        var command = new Command("jobs", "list your jobs, newest first") { state, limit };
        command.SetAction((parse, ct) => QueueCli.WithClientAsync(parse, async (client, output) =>
        {
            var page = await client.ListJobsAsync(parse.GetValue(state), parse.GetValue(limit), null, ct);
            var now = DateTimeOffset.UtcNow;
            foreach (var s in page.Jobs)
            {
                await output.WriteLineAsync(StatusFormat.Line(s, now));
            }
            if (page.Jobs.Count == 0)
            {
                await output.WriteLineAsync("no jobs");
            }
            return 0;
        }));
        return command;
    }
}
