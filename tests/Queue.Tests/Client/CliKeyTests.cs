namespace Queue.Tests.Client;

/// <summary>The worker key stays with <c>queue work</c>: the command it runs on untrusted documents never sees it.</summary>
public sealed class CliKeyTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Fact]
    public async Task Queue_work_reads_its_key_from_a_file_and_passes_the_command_no_key()
    {
        using var folder = await TempFolder.CreateAsync(3);
        var (_, key) = await fx.CustomerAsync("keyless");
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        var submit = await fx.RunCliAsync(key, timeout.Token, null, "submit", folder.Path, "--name", "keyless", "--tasks", "keyless");
        Assert.True(submit.Exit == 0, submit.ToString());
        var keyFile = Path.Combine(folder.Path, "..", $"worker-{Guid.NewGuid():N}.key");
        await File.WriteAllTextAsync(keyFile, fx.WorkerKey + "\n", timeout.Token);
        Environment.SetEnvironmentVariable("QUEUE_KEY_FILE", keyFile);
        try
        {
            // No --key: the key comes from QUEUE_KEY_FILE; the command prints what of it it can see.
            var output = new LineWriter(null);
            var error = new LineWriter(null);
            var work = await Queue.Cli.QueueCli.RunAsync(["--url", fx.BaseAddress.ToString(), "work", "--tasks", "keyless", "--idle-exit", "2", "--",
                "sh", "-c", "echo \"key=${QUEUE_KEY:-none} file=${QUEUE_KEY_FILE:-none}\""], output, error, timeout.Token);
            Assert.True(work == 0, new CliRun(work, output.Lines, error.Lines).ToString());
            var seen = output.Lines.Where(l => l.Contains("key=", StringComparison.Ordinal)).ToList();
            Assert.Equal(3, seen.Count);
            Assert.All(seen, l => Assert.EndsWith("key=none file=none", l, StringComparison.Ordinal));
        }
        finally
        {
            Environment.SetEnvironmentVariable("QUEUE_KEY_FILE", null);
            File.Delete(keyFile);
        }
    }
}
