using System.Net.Http.Headers;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Mvc.Testing;
using Queue.Api;

namespace Queue.Tests.Infrastructure;

/// <summary>The real Queue.Api, in process, against a test class's database.</summary>
public sealed class ApiFactory(string connectionString, IDictionary<string, string?>? settings = null) : WebApplicationFactory<ApiEntry>
{
    protected override void ConfigureWebHost(IWebHostBuilder builder)
    {
        builder.UseSetting("ConnectionStrings:Queue", connectionString);
        // Revocation must be visible at once in tests.
        builder.UseSetting("Auth:KeyCacheSeconds", "0");
        foreach (var (k, v) in settings ?? new Dictionary<string, string?>())
        {
            builder.UseSetting(k, v);
        }
    }

    public HttpClient ClientWithKey(string? key)
    {
        var client = CreateClient();
        if (key is not null)
        {
            client.DefaultRequestHeaders.Authorization = new AuthenticationHeaderValue("Bearer", key);
        }
        return client;
    }
}
