using System.CommandLine;
using Queue.Client;

namespace Queue.Cli;

/// <summary>
/// <c>queue submit &lt;folder|files...&gt; --name N [--tasks a,b] [--concurrency 8]</c>: an open job, every file uploaded
/// (streamed, a progress bar), then closed. Run again after an interruption, it resumes: the job and each file carry
/// deterministic Idempotency-Keys, and files the job already holds are skipped.
/// </summary>
internal static class SubmitCommand
{
    public static Command Build()
    {
        var paths = new Argument<string[]>("paths") { Description = "a folder (submitted recursively) or files", Arity = ArgumentArity.OneOrMore };
        var name = new Option<string>("--name") { Description = "the job's name", Required = true };
        var tasks = new Option<string?>("--tasks") { Description = "comma-separated tasks (default: the tenant's)" };
        var concurrency = new Option<int>("--concurrency") { Description = "uploads at once", DefaultValueFactory = _ => 8 };
        var command = new Command("submit", "submit a folder or files as one job") { paths, name, tasks, concurrency };
        command.SetAction((parse, ct) => QueueCli.WithClientAsync(parse, (client, output) =>
            RunAsync(client, output, parse.GetRequiredValue(name), SplitTasks(parse.GetValue(tasks)), parse.GetRequiredValue(paths),
                Math.Max(1, parse.GetValue(concurrency)), ct)));
        return command;
    }

    internal static IReadOnlyList<string>? SplitTasks(string? tasks) =>
        tasks?.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries) is { Length: > 0 } list ? list : null;

    private static async Task<int> RunAsync(QueueClient client, TextWriter output, string name, IReadOnlyList<string>? tasks, string[] paths,
        int concurrency, CancellationToken ct)
    {
        var plan = await SubmitPlan.BuildAsync(name, tasks ?? [], paths, ct);
        if (plan.Files.Count == 0)
        {
            await output.WriteLineAsync("queue: nothing to submit");
            return 1;
        }
        var job = await client.CreateJobAsync(new NewJob(name, tasks, Open: true), plan.JobKey, ct);
        var held = new HashSet<(string, string)>();
        await foreach (var d in client.AllDocumentsAsync(job.Id, ct))
        {
            held.Add((d.Name, d.Sha256));
        }
        var todo = plan.Files.Where(f => !held.Contains((f.Name, f.Sha256))).ToList();
        await output.WriteLineAsync(todo.Count == plan.Files.Count
            ? $"job {job.Id}: uploading {todo.Count} files"
            : $"job {job.Id}: resuming, {plan.Files.Count - todo.Count} of {plan.Files.Count} files already there");
        await CliProgress.RunAsync(output, "uploaded", plan.Files.Count, plan.Files.Count - todo.Count, advance =>
            Parallel.ForEachAsync(todo, new ParallelOptions { MaxDegreeOfParallelism = concurrency, CancellationToken = ct }, async (f, t) =>
            {
                await client.UploadFileAsync(job.Id, f.Name, f.Path, f.ContentType, plan.FileKey(f), t);
                advance();
            }));
        var status = await client.CloseJobAsync(job.Id, ct);
        await output.WriteLineAsync($"job {status.Id} closed: {status.Documents} documents, {status.Items.Total} items ({string.Join(',', status.Tasks)})");
        return 0;
    }
}
