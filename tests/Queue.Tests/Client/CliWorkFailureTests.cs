using Queue.Client;

namespace Queue.Tests.Client;

/// <summary><c>queue work</c> with a command that crashes: the item is retried, then dead, with the stderr tail as its error.</summary>
public sealed class CliWorkFailureTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Fact]
    public async Task A_crashing_commands_item_is_retried_then_dead_with_the_tail_of_stderr_as_its_error()
    {
        var (_, key) = await fx.CustomerAsync("crash", maxAttempts: 2);
        using var timeout = new CancellationTokenSource(TimeSpan.FromMinutes(2));
        using var client = fx.Client(key);
        var job = await client.CreateJobAsync(new NewJob("crashing", ["crash"], Documents: [new InlineDocument("in.txt", "text/plain", "hello"u8.ToArray())]),
            ct: timeout.Token);

        var work = await fx.RunCliAsync(fx.WorkerKey, timeout.Token, null, "work", "--tasks", "crash", "--concurrency", "1", "--idle-exit", "4", "--",
            "sh", "-c", "cat > /dev/null; echo 'starting up' >&2; echo \"kaboom on attempt $QUEUE_ATTEMPT of $QUEUE_DOCUMENT_NAME\" >&2; exit 3");
        Assert.True(work.Exit == 0, work.ToString());

        var dead = Assert.Single((await client.ListItemsAsync(job.Id, "dead", ct: timeout.Token)).Items);
        Assert.Equal(2, dead.Attempts);
        Assert.Equal("exit code 3: starting up\nkaboom on attempt 2 of in.txt", dead.LastError);
        Assert.Contains(work.Error, l => l.Contains("attempt 1) failed", StringComparison.Ordinal));
        Assert.Equal("done", (await client.GetJobAsync(job.Id, timeout.Token)).State);
    }
}
