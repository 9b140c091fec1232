using Microsoft.Extensions.DependencyInjection;
using Queue.Client;

namespace Queue.Tests.Client;

/// <summary><c>AddQueueClient</c>: a typed client of IHttpClientFactory over the client's own pooled connection settings.</summary>
public sealed class ClientRegistrationTests(ClientFixture fx) : IClassFixture<ClientFixture>
{
    [Fact]
    public async Task AddQueueClient_gives_a_factory_client_whose_connections_live_two_minutes_and_close_when_idle_before_a_balancer_forgets_them()
    {
        var (_, key) = await fx.CustomerAsync("registered");
        var services = new ServiceCollection();
        var builder = services.AddQueueClient(o =>
        {
            o.BaseAddress = fx.BaseAddress;
            o.ApiKey = key;
        });
        await using var provider = services.BuildServiceProvider();

        var factory = provider.GetRequiredService<IHttpMessageHandlerFactory>();
        var handler = Assert.IsType<SocketsHttpHandler>(Primary(factory.CreateHandler(builder.Name)));
        Assert.Equal(TimeSpan.FromMinutes(2), handler.PooledConnectionLifetime);
        // AWS ALB's 60 s is the shortest idle timeout among common balancers (nginx 75 s, Azure 4 min).
        Assert.InRange(handler.PooledConnectionIdleTimeout, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(59));
        // The factory must not rotate handlers under the pool: every client shares the one pool of connections.
        Assert.Same(handler, Primary(factory.CreateHandler(builder.Name)));

        var client = provider.GetRequiredService<QueueClient>();
        var job = await client.CreateJobAsync(new NewJob("registered", ["registered"],
            Documents: [new InlineDocument("a.txt", "text/plain", "hello"u8.ToArray())]));
        Assert.Equal(1, (await provider.GetRequiredService<QueueClient>().GetJobAsync(job.Id)).Items.Total);
    }

    [Fact]
    public void AddQueueClient_passes_configured_pool_timeouts_to_the_handler()
    {
        var services = new ServiceCollection();
        var builder = services.AddQueueClient(o =>
        {
            o.BaseAddress = fx.BaseAddress;
            o.PooledConnectionLifetime = TimeSpan.FromSeconds(90);
            o.PooledConnectionIdleTimeout = TimeSpan.FromSeconds(20);
        });
        using var provider = services.BuildServiceProvider();

        var handler = Assert.IsType<SocketsHttpHandler>(Primary(provider.GetRequiredService<IHttpMessageHandlerFactory>().CreateHandler(builder.Name)));
        Assert.Equal(TimeSpan.FromSeconds(90), handler.PooledConnectionLifetime);
        Assert.Equal(TimeSpan.FromSeconds(20), handler.PooledConnectionIdleTimeout);
    }

    /// <summary>The handler that owns the sockets, under the factory's lifetime and logging wrappers.</summary>
    private static HttpMessageHandler Primary(HttpMessageHandler handler)
    {
        while (handler is DelegatingHandler { InnerHandler: { } inner })
        {
            handler = inner;
        }
        return handler;
    }
}
