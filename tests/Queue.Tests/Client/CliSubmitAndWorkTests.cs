using System.Text.RegularExpressions;
using Queue.Tests.Jobs;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Client;

/// <summary>The <c>queue</c> command end to end against the real Api: submit a folder, resume a submit, work with a real process.</summary>
[TakesAbout(18)]
public sealed partial class CliSubmitAndWorkTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Fact]
    public async Task A_folder_of_500_files_is_submitted_and_worked_to_done_by_sha256sum_with_every_hash_right()
    {
        using var folder = await TempFolder.CreateAsync(500);
        var (tenant, key) = await fx.CustomerAsync("hash");
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(3));

        var submit = await fx.RunCliAsync(key, timeout.Token, null, "submit", folder.Path, "--name", "hashes", "--tasks", "hash");
        Assert.True(submit.Exit == 0, submit.ToString());
        var jobId = TempFolder.JobIdFrom(submit.Output);

        var work = await fx.RunCliAsync(fx.WorkerKey, timeout.Token, null,
            "work", "--tasks", "hash", "--concurrency", "4", "--idle-exit", "2", "--", "sha256sum");
        Assert.True(work.Exit == 0, work.ToString());

        // sha256sum read the document from stdin; the worker passed each line on, prefixed with the document's name.
        var seen = work.Output.Select(l => HashLine().Match(l)).Where(m => m.Success)
            .ToDictionary(m => m.Groups["name"].Value, m => m.Groups["hash"].Value, StringComparer.Ordinal);
        Assert.Equal(folder.Hashes.OrderBy(p => p.Key, StringComparer.Ordinal), seen.OrderBy(p => p.Key, StringComparer.Ordinal));
        using var client = fx.Client(key);
        var status = await client.GetJobAsync(jobId, timeout.Token);
        Assert.Equal("done", status.State);
        Assert.Equal(500, status.Items.Done);
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @tenant", new { tenant }));
    }

    [Fact]
    public async Task A_submit_cancelled_halfway_and_run_again_stores_every_file_exactly_once()
    {
        using var folder = await TempFolder.CreateAsync(300);
        var (tenant, key) = await fx.CustomerAsync("resume");
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        using var interrupt = CancellationTokenSource.CreateLinkedTokenSource(timeout.Token);
        string[] args = ["submit", folder.Path, "--name", "resumable", "--tasks", "resume", "--concurrency", "4"];

        var first = await fx.RunCliAsync(key, interrupt.Token, line =>
        {
            // Ctrl-C once half the files are in, with uploads still in flight.
            if (Progress().Match(line) is { Success: true } m && int.Parse(m.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture) >= 150)
            {
                interrupt.Cancel();
            }
        }, args);
        Assert.True(first.Exit == 130, first.ToString());
        var jobId = TempFolder.JobIdFrom(first.Output);
        var afterFirst = await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @jobId", new { jobId });
        Assert.InRange(afterFirst, 150, 299);

        var second = await fx.RunCliAsync(key, timeout.Token, null, args);
        Assert.True(second.Exit == 0, second.ToString());
        Assert.Contains(second.Output, l => l.Contains("resuming", StringComparison.Ordinal));
        Assert.Equal(jobId, TempFolder.JobIdFrom(second.Output));
        Assert.Equal(1, await fx.CountAsync("SELECT COUNT(*) FROM jobs WHERE tenant_id = @tenant", new { tenant }));
        Assert.Equal(300, await fx.CountAsync("SELECT COUNT(*) FROM documents WHERE job_id = @jobId", new { jobId }));
        Assert.Equal(300, await fx.CountAsync("SELECT COUNT(DISTINCT name) FROM documents WHERE job_id = @jobId", new { jobId }));
        Assert.Equal(300, await fx.CountAsync("SELECT COUNT(*) FROM items WHERE job_id = @jobId", new { jobId }));
        using var client = fx.Client(key);
        var stored = new Dictionary<string, string>(StringComparer.Ordinal);
        await foreach (var d in client.AllDocumentsAsync(jobId, timeout.Token))
        {
            stored.Add(d.Name, d.Sha256);
        }
        Assert.Equal(folder.Hashes.OrderBy(p => p.Key, StringComparer.Ordinal), stored.OrderBy(p => p.Key, StringComparer.Ordinal));
        Assert.Equal("closed", (await client.GetJobAsync(jobId, timeout.Token)).State);
    }

    [GeneratedRegex(@"^(?<name>[^:]+): (?<hash>[0-9a-f]{64})  -$")]
    private static partial Regex HashLine();

    [GeneratedRegex(@"^uploaded (\d+)/")]
    private static partial Regex Progress();
}
