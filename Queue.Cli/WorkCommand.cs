using System.CommandLine;
using Queue.Client;

namespace Queue.Cli;

/// <summary>
/// <c>queue work --tasks text [--concurrency N] [--idle-exit S] [--lease S] [--finish-in-background] -- &lt;command&gt; [args]</c>:
/// a worker that runs the command once per item; exit 0 completes the item, anything else fails it with the tail of
/// stderr, and that same call claims the slot's next item (CONTRACT v1.3). Ctrl-C stops
/// claiming, lets running commands finish for a grace period, and releases the rest.
/// </summary>
internal static class WorkCommand
{
    public static Command Build()
    {
        var commandLine = new Argument<string[]>("command") { Description = "the command and its arguments, after --", Arity = ArgumentArity.OneOrMore };
        var tasks = new Option<string?>("--tasks") { Description = "comma-separated tasks to work (default: any)" };
        var concurrency = new Option<int>("--concurrency") { Description = "commands at once", DefaultValueFactory = _ => Environment.ProcessorCount };
        var idleExit = new Option<double?>("--idle-exit") { Description = "exit after this many seconds without work" };
        var lease = new Option<int>("--lease") { Description = "lease seconds, renewed while the command runs (10 to 3600)", DefaultValueFactory = _ => 60 };
        var grace = new Option<double>("--grace") { Description = "seconds running commands may finish after Ctrl-C", DefaultValueFactory = _ => 10 };
        var worker = new Option<string?>("--worker") { Description = "this worker's name (default: the host name)" };
        var background = new Option<bool>("--finish-in-background")
        {
            Description = "claim the next item while the last one's complete or fail is still unanswered, instead of claiming it in the same call",
        };
        var command = new Command("work", "run a command for every item of the given tasks") { commandLine, tasks, concurrency, idleExit, lease, grace, worker, background };
        command.SetAction((parse, ct) => QueueCli.WithClientAsync(parse, async (client, output) =>
        {
            var argv = parse.GetRequiredValue(commandLine);
            var error = parse.InvocationConfiguration.Error;
            var runner = new ItemProcess(argv[0], argv[1..], output, error);
            var options = new WorkOptions
            {
                Lease = TimeSpan.FromSeconds(parse.GetValue(lease)),
                IdleExit = parse.GetValue(idleExit) is { } s ? TimeSpan.FromSeconds(s) : null,
                ShutdownGrace = TimeSpan.FromSeconds(parse.GetValue(grace)),
                Worker = parse.GetValue(worker) ?? Environment.MachineName,
                // A command per item takes milliseconds at least: one exchange per item (complete and claim the next,
                // CONTRACT v1.3) costs the service half the calls, and no completion is ever left unanswered.
                FinishInBackground = parse.GetValue(background),
                ClaimWithFinish = true,
                OnFinished = (w, outcome, e) =>
                {
                    if (outcome != WorkOutcome.Completed)
                    {
                        error.WriteLine($"queue: item {w.Item.Id} ({w.Item.DocumentName}, {w.Item.Task}, attempt {w.Item.Attempt}) {outcome.ToString().ToLowerInvariant()}: {e?.Message}");
                    }
                },
            };
            var taskList = SubmitCommand.SplitTasks(parse.GetValue(tasks)) ?? [];
            try
            {
                await client.WorkAsync(taskList, runner.RunAsync, Math.Max(1, parse.GetValue(concurrency)), ct, options);
            }
            catch (OperationCanceledException) when (ct.IsCancellationRequested)
            {
                return 130;
            }
            return ct.IsCancellationRequested ? 130 : 0;
        }));
        return command;
    }
}
