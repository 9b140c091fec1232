using System.Net;
using System.Net.Http.Json;
using Microsoft.AspNetCore.TestHost;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using MySqlConnector;
using Queue.Core.Cluster;
using Queue.Local;
using Queue.Tests.Infrastructure;

namespace Queue.Tests.Cluster;

/// <summary>Lease times come from the database's clock (DatabaseClock): none is made before it was read once.</summary>
public sealed class ClockSyncTests : DatabaseFixture
{
    [Fact]
    public async Task A_first_clock_reading_that_fails_is_tried_again_every_second_until_the_database_answers()
    {
        await using var proxy = new FaultProxy();
        proxy.Start(Server.Port);
        proxy.Refusing = true;
        await using var db = new MySqlDataSource(proxy.ConnectionString(ConnectionString));
        var services = new ServiceCollection().AddSingleton(db).BuildServiceProvider();
        var clock = new DatabaseClock(TimeProvider.System);
        using var sync = new DatabaseClockSync(services, clock, Options.Create(new ClusterOptions()), NullLogger<DatabaseClockSync>.Instance);

        await sync.StartAsync(CancellationToken.None);
        try
        {
            Assert.False(clock.Synced);
            Assert.Throws<Queue.Core.Data.ServiceBusyException>(clock.ThrowIfNotSynced);

            proxy.Refusing = false;
            // ClusterOptions' default period is 30 s: synced within a few seconds means the first-reading retry did it.
            Assert.True(await Eventually.HoldsAsync(() => Task.FromResult(clock.Synced), TimeSpan.FromSeconds(10)));
            clock.ThrowIfNotSynced();
        }
        finally
        {
            await sync.StopAsync(CancellationToken.None);
        }
    }

    [Fact]
    public async Task An_api_process_that_never_read_the_database_clock_answers_next_and_extend_with_503_and_retry_after()
    {
        await using var api = new ApiFactory(ConnectionString).WithWebHostBuilder(b => b.ConfigureTestServices(s =>
        {
            // The process's clock reader is gone, as if every reading had failed so far.
            s.RemoveAll<DatabaseClock>();
            s.AddSingleton(new DatabaseClock(TimeProvider.System));
            var readers = s.Where(d => d.ServiceType == typeof(IHostedService) && d.ImplementationType == typeof(DatabaseClockSync)).ToList();
            Assert.NotEmpty(readers);
            foreach (var d in readers)
            {
                s.Remove(d);
            }
        }));
        var worker = await NewWorkerKeyAsync();
        using var http = api.CreateClient();
        http.DefaultRequestHeaders.Authorization = new System.Net.Http.Headers.AuthenticationHeaderValue("Bearer", worker);

        using var next = await http.PostAsJsonAsync("/next", new { tasks = new[] { "any" }, max = 1 });
        Assert.Equal(HttpStatusCode.ServiceUnavailable, next.StatusCode);
        Assert.NotNull(next.Headers.RetryAfter);
        Assert.Contains("clock", await next.Content.ReadAsStringAsync(), StringComparison.Ordinal);

        using var extend = await http.PostAsJsonAsync("/items/1/extend", new { leaseToken = Guid.NewGuid().ToString(), lease = 60 });
        Assert.Equal(HttpStatusCode.ServiceUnavailable, extend.StatusCode);
    }
}
