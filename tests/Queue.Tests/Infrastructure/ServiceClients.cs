using Queue.Local;

namespace Queue.Tests.Infrastructure;

/// <summary>Clients of a service started as its own process, as <see cref="ApiFactory.ClientWithKey"/> is for the in-process one.</summary>
internal static class ServiceClients
{
    public static HttpClient ClientWithKey(this ServiceProcess api, string key)
    {
        var http = new HttpClient { BaseAddress = new Uri(api.Url), Timeout = TimeSpan.FromSeconds(60) };
        http.DefaultRequestHeaders.Authorization = new("Bearer", key);
        return http;
    }
}
