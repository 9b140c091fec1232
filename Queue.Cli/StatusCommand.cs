using System.CommandLine;

namespace Queue.Cli;

/// <summary><c>queue status &lt;job&gt; [--watch] [--interval S]</c>: progress by item state, position and ETA.</summary>
internal static class StatusCommand
{
    public static Command Build()
    {
        var job = new Argument<long>("job") { Description = "the job's id" };
        var watch = new Option<bool>("--watch") { Description = "repeat until the job is done or cancelled" };
        var interval = new Option<double>("--interval") { Description = "seconds between looks with --watch", DefaultValueFactory = _ => 2 };
        var command = new Command("status", "a job's progress by item state, its position and ETA") { job, watch, interval };
        command.SetAction((parse, ct) => QueueCli.WithClientAsync(parse, async (client, output) =>
        {
            var id = parse.GetValue(job);
            var every = TimeSpan.FromSeconds(Math.Max(0.1, parse.GetValue(interval)));
            while (true)
            {
                var status = await client.GetJobAsync(id, ct);
                await output.WriteLineAsync(StatusFormat.Line(status, DateTimeOffset.UtcNow));
                if (!parse.GetValue(watch) || status.IsFinished)
                {
                    return 0;
                }
                await Task.Delay(every, ct);
            }
        }));
        return command;
    }
}
