using Queue.Local;

namespace Queue.Tests.Foundation;

/// <summary>Production never starts a database by itself: a service with no connection string stops at once and says what to do.</summary>
public sealed class NoDatabaseTests
{
    [Theory]
    [InlineData("Queue.Api")]
    [InlineData("Queue.Scheduler")]
    [InlineData("Queue.Admin")]
    public async Task A_service_started_without_a_connection_string_exits_non_zero_and_says_how_to_run_locally(string service)
    {
        await using var process = ServiceProcess.Start(service, connectionString: "", new Dictionary<string, string> { ["QUEUE_DB"] = "" });
        var exit = await process.WaitForExitAsync(TimeSpan.FromSeconds(30));
        Assert.NotNull(exit);
        Assert.NotEqual(0, exit);
        Assert.Contains("No database is configured", process.Output, StringComparison.Ordinal);
        Assert.Contains("./run.sh", process.Output, StringComparison.Ordinal);
        Assert.DoesNotContain("mariadbd", process.Output, StringComparison.Ordinal);
    }
}
