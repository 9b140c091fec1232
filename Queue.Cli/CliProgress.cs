using Spectre.Console;

namespace Queue.Cli;

/// <summary>
/// A progress bar on a terminal (Spectre.Console), and plain "label n/total" lines, at most one per percent, when the
/// output is a file, a pipe or a test's writer, so logs stay readable.
/// </summary>
internal static class CliProgress
{
    public static async Task RunAsync(TextWriter output, string label, long total, long done, Func<Action, Task> body)
    {
        if (ReferenceEquals(output, Console.Out) && !Console.IsOutputRedirected && AnsiConsole.Profile.Capabilities.Interactive)
        {
            await AnsiConsole.Progress()
                .Columns(new TaskDescriptionColumn(), new ProgressBarColumn(), new PercentageColumn(), new RemainingTimeColumn(), new SpinnerColumn())
                .StartAsync(async ctx =>
                {
                    var task = ctx.AddTask(label, maxValue: Math.Max(total, 1));
                    task.Increment(done);
                    await body(() => task.Increment(1));
                });
            return;
        }
        var gate = new Lock();
        var step = Math.Max(1, total / 100);
        var lastShown = -1L;
        void Show(long n)
        {
            if (n == total || n - lastShown >= step)
            {
                lastShown = n;
                output.WriteLine($"{label} {n}/{total}");
            }
        }
        Show(done);
        await body(() =>
        {
            lock (gate)
            {
                Show(++done);
            }
        });
    }
}
